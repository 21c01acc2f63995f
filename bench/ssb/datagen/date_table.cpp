#include "ssb/datagen/date_table.hpp"

#include "ssb/datagen/calendar.hpp"
#include "ssb/datagen/domains.hpp"
#include "ssb/datagen/scale.hpp"

namespace mqx::ssb {
namespace {

constexpr int kSaturday = 6;

// dbgen's week number: days 1..6 of the year are week 1, and a new week
// starts every 7 days from day 7, whatever the weekday (1..53).
int weekNumberInYear(int dayOfYear) { return dayOfYear / 7 + 1; }

} // namespace

GeneratedTable generateDateTable() {
  EncodedDomain weekdays = weekdayDomain();
  EncodedDomain months = monthDomain();
  EncodedDomain yearMonths = yearMonthDomain();
  EncodedDomain seasons = sellingSeasonDomain();

  ColumnarTable table(TableId::Date);
  for (int dayIndex = 0; dayIndex < kDateRows; ++dayIndex) {
    CalendarDay d = calendarDay(dayIndex);
    int yearMonthIndex = (d.year - kCalendarStartYear) * 12 + d.month - 1;
    table.column("d_datekey").push_back(datekeyOf(dayIndex));
    table.column("d_dayofweek").push_back(weekdays.code(static_cast<std::size_t>(d.weekday)));
    table.column("d_month").push_back(months.code(static_cast<std::size_t>(d.month - 1)));
    table.column("d_year").push_back(d.year);
    table.column("d_yearmonthnum").push_back(d.year * 100 + d.month);
    table.column("d_yearmonth")
        .push_back(yearMonths.code(static_cast<std::size_t>(yearMonthIndex)));
    // Sunday is day 1 of the week, as the specification's dbgen intends.
    table.column("d_daynuminweek").push_back(d.weekday + 1);
    table.column("d_daynuminmonth").push_back(d.day);
    table.column("d_daynuminyear").push_back(d.dayOfYear);
    table.column("d_monthnuminyear").push_back(d.month);
    table.column("d_weeknuminyear").push_back(weekNumberInYear(d.dayOfYear));
    table.column("d_sellingseason")
        .push_back(seasons.code(static_cast<std::size_t>(sellingSeasonIndex(d.month))));
    table.column("d_lastdayinweekfl").push_back(d.weekday == kSaturday ? 1 : 0);
    table.column("d_lastdayinmonthfl").push_back(d.lastDayOfMonth ? 1 : 0);
    table.column("d_holidayfl").push_back(isHoliday(d.month, d.day) ? 1 : 0);
    table.column("d_weekdayfl").push_back(d.weekday != 0 && d.weekday != kSaturday ? 1 : 0);
  }
  return GeneratedTable{
      std::move(table),
      DictionaryMap{{"d_dayofweek", std::move(weekdays.dictionary)},
                    {"d_month", std::move(months.dictionary)},
                    {"d_yearmonth", std::move(yearMonths.dictionary)},
                    {"d_sellingseason", std::move(seasons.dictionary)}},
  };
}

} // namespace mqx::ssb

#include "ssb/datagen/calendar.hpp"

#include <chrono>

namespace mqx::ssb {
namespace {

using namespace std::chrono;

constexpr sys_days kEpoch = year{kCalendarStartYear} / January / 1;

} // namespace

CalendarDay calendarDay(int dayIndex) {
  sys_days date = kEpoch + days{dayIndex};
  year_month_day ymd{date};
  sys_days firstOfYear = ymd.year() / January / 1;
  year_month_day_last last{ymd.year() / ymd.month() / std::chrono::last};
  return CalendarDay{
      .year = static_cast<int>(ymd.year()),
      .month = static_cast<int>(static_cast<unsigned>(ymd.month())),
      .day = static_cast<int>(static_cast<unsigned>(ymd.day())),
      .dayOfYear = static_cast<int>((date - firstOfYear).count()) + 1,
      .weekday = static_cast<int>(weekday{date}.c_encoding()),
      .lastDayOfMonth = ymd.day() == last.day(),
  };
}

std::int32_t datekeyOf(int dayIndex) {
  CalendarDay d = calendarDay(dayIndex);
  return d.year * 10000 + d.month * 100 + d.day;
}

} // namespace mqx::ssb

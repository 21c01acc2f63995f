// The date dimension against the calendar: 2,556 consecutive days from
// 1992-01-01, every derived column consistent with the date itself.
#include "ssb/datagen/date_table.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace mqx::ssb {
namespace {

using namespace std::chrono;

class DateTableTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { table_ = new GeneratedTable(generateDateTable()); }
  static void TearDownTestSuite() { delete table_; }

  static const std::vector<std::int32_t> &column(std::string_view name) {
    return table_->table.column(name);
  }
  static std::string text(std::string_view name, std::size_t row) {
    return table_->dictionaries.at(std::string(name)).value(column(name)[row]);
  }
  static std::size_t rows() { return column("d_datekey").size(); }

  static GeneratedTable *table_;
};

GeneratedTable *DateTableTest::table_ = nullptr;

TEST_F(DateTableTest, CoversTheSpecifiedDays) {
  ASSERT_EQ(rows(), 2556u);
  EXPECT_EQ(column("d_datekey").front(), 19920101);
  EXPECT_EQ(column("d_datekey").back(), 19981230);
}

TEST_F(DateTableTest, EveryColumnAgreesWithTheCalendar) {
  static constexpr const char *kMonths[] = {"January",   "February", "March",    "April",
                                            "May",       "June",     "July",     "August",
                                            "September", "October",  "November", "December"};
  static constexpr const char *kDays[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                          "Thursday", "Friday", "Saturday"};
  sys_days day = year{1992} / January / 1;
  for (std::size_t i = 0; i < rows(); ++i, day += days{1}) {
    year_month_day ymd{day};
    int y = static_cast<int>(ymd.year());
    int m = static_cast<int>(static_cast<unsigned>(ymd.month()));
    int d = static_cast<int>(static_cast<unsigned>(ymd.day()));
    int dayOfYear = static_cast<int>((day - sys_days{ymd.year() / January / 1}).count()) + 1;
    unsigned weekday = std::chrono::weekday{day}.c_encoding(); // 0 = Sunday
    ASSERT_EQ(column("d_datekey")[i], y * 10000 + m * 100 + d);
    ASSERT_EQ(column("d_year")[i], y);
    ASSERT_EQ(column("d_monthnuminyear")[i], m);
    ASSERT_EQ(column("d_daynuminmonth")[i], d);
    ASSERT_EQ(column("d_yearmonthnum")[i], y * 100 + m);
    ASSERT_EQ(text("d_yearmonth", i), std::string(kMonths[m - 1]).substr(0, 3) + std::to_string(y));
    ASSERT_EQ(text("d_month", i), kMonths[m - 1]);
    ASSERT_EQ(column("d_daynuminyear")[i], dayOfYear);
    ASSERT_EQ(column("d_weeknuminyear")[i], dayOfYear / 7 + 1);
    ASSERT_EQ(column("d_daynuminweek")[i], static_cast<int>(weekday) + 1);
    ASSERT_EQ(text("d_dayofweek", i), kDays[weekday]);
    ASSERT_EQ(column("d_lastdayinweekfl")[i], weekday == 6 ? 1 : 0);
    ASSERT_EQ(column("d_weekdayfl")[i], weekday >= 1 && weekday <= 5 ? 1 : 0);
    bool lastOfMonth = (day + days{1}) == sys_days{year_month_day{day + days{1}}.year() /
                                                   year_month_day{day + days{1}}.month() / 1};
    ASSERT_EQ(column("d_lastdayinmonthfl")[i], lastOfMonth ? 1 : 0);
  }
}

TEST_F(DateTableTest, QueryConstantsSelectTheExpectedDays) {
  int weekSix1994 = 0, december1997 = 0, year1993 = 0, lastDays = 0;
  for (std::size_t i = 0; i < rows(); ++i) {
    if (column("d_year")[i] == 1994 && column("d_weeknuminyear")[i] == 6) {
      ++weekSix1994; // days 35..41 of 1994: February 4..10
      EXPECT_GE(column("d_datekey")[i], 19940204);
      EXPECT_LE(column("d_datekey")[i], 19940210);
    }
    december1997 += text("d_yearmonth", i) == "Dec1997";
    year1993 += column("d_year")[i] == 1993;
    lastDays += column("d_lastdayinmonthfl")[i];
  }
  EXPECT_EQ(weekSix1994, 7);
  EXPECT_EQ(december1997, 31);
  EXPECT_EQ(year1993, 365);
  EXPECT_EQ(lastDays, 83); // 84 months, and the table stops a day before 1998-12-31
}

TEST_F(DateTableTest, SeasonsAndHolidaysFollowDbgen) {
  for (std::size_t i = 0; i < rows(); ++i) {
    int m = column("d_monthnuminyear")[i];
    std::string season = text("d_sellingseason", i);
    std::string expected = m <= 3    ? "Winter"
                           : m == 4  ? "Spring"
                           : m <= 8  ? "Summer"
                           : m <= 10 ? "Fall"
                                     : "Christmas";
    ASSERT_EQ(season, expected) << column("d_datekey")[i];
    int key = column("d_datekey")[i] % 10000;
    bool holiday =
        key == 1224 || key == 101 ||
        (key % 100 == 20 && key / 100 != 3 && key / 100 != 6 && key / 100 != 12 && key / 100 != 1);
    ASSERT_EQ(column("d_holidayfl")[i], holiday ? 1 : 0) << column("d_datekey")[i];
  }
}

} // namespace
} // namespace mqx::ssb

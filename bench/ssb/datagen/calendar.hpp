// The SSB calendar: day index 0 is 1992-01-01. The date dimension covers the
// first 2,556 days (the specification's count; the seven years 1992..1998
// have 2,557 days, and dbgen's date table, like the specification, stops at
// 1998-12-30). Order dates are drawn, as dbgen draws them, from the first
// 2,406 days (1992-01-01..1998-08-02): TPC-H keeps the last 151 days free for
// ship and receipt dates, and SSB inherited the range. Commit dates are 30 to
// 90 days after the order date, so every date stays inside the dimension.
#pragma once

#include <cstdint>

namespace mqx::ssb {

inline constexpr int kCalendarStartYear = 1992;
inline constexpr int kOrderDateDays = 2557 - 151;
inline constexpr int kCommitDelayMin = 30;
inline constexpr int kCommitDelayMax = 90;

struct CalendarDay {
  int year;
  int month;     // 1..12
  int day;       // 1..31
  int dayOfYear; // 1..366
  int weekday;   // 0 = Sunday .. 6 = Saturday
  bool lastDayOfMonth;
};

CalendarDay calendarDay(int dayIndex);
// yyyymmdd, the form of d_datekey, lo_orderdate and lo_commitdate.
std::int32_t datekeyOf(int dayIndex);

} // namespace mqx::ssb

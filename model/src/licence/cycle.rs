//! Licence cycles: months anchored on the subscription day, in UTC.
//!
//! Cycle `k` starts on the subscription day `k` months after the
//! subscription (`k` may be negative before it). A day the month does not
//! have becomes the month's last day, and the next month goes back to the
//! anchor day: a licence taken on 31 January has cycles starting 28 (or 29)
//! February, 31 March, 30 April, 31 May… Without a licence the cycles are
//! calendar months.
//!
//! Overrun: what a cycle used beyond the limit (with what it carried in) is
//! carried into the next one, so it chains until a cycle uses less than the
//! limit.

use time::{Date, Month, OffsetDateTime};

/// One cycle: `[start, end)`, both at 00:00 UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    /// Months since the subscription (0: the cycle starting on the day of
    /// the subscription; negative before it).
    pub index: i64,
    pub start: Date,
    /// The first day of the next cycle.
    pub end: Date,
}

impl Cycle {
    /// Unix seconds of the start.
    pub fn start_ts(&self) -> i64 {
        midnight(self.start)
    }

    /// Unix seconds of the end (excluded).
    pub fn end_ts(&self) -> i64 {
        midnight(self.end)
    }
}

fn midnight(date: Date) -> i64 {
    date.midnight().assume_utc().unix_timestamp()
}

/// The UTC day of a Unix time (the epoch's day for a time out of range).
fn day_of(now: i64) -> Date {
    OffsetDateTime::from_unix_timestamp(now)
        .map(OffsetDateTime::date)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH.date())
}

/// Months since year 0 of a date's month.
fn month_number(date: Date) -> i64 {
    i64::from(date.year()) * 12 + i64::from(u8::from(date.month())) - 1
}

/// The day cycle `k` of a subscription on `anchor` starts.
pub fn cycle_start(anchor: Date, k: i64) -> Date {
    let months = month_number(anchor).saturating_add(k);
    let year = i32::try_from(months.div_euclid(12)).unwrap_or(i32::MAX);
    let month = u8::try_from(months.rem_euclid(12) + 1)
        .ok()
        .and_then(|m| Month::try_from(m).ok())
        .unwrap_or(Month::January);
    let day = anchor.day().min(month.length(year));
    Date::from_calendar_date(year, month, day).unwrap_or(if k < 0 { Date::MIN } else { Date::MAX })
}

/// The cycle of a subscription taken on `subscribed_at` that holds `now`.
pub fn cycle_of(subscribed_at: Date, now: i64) -> Cycle {
    let today = day_of(now);
    let mut index = month_number(today) - month_number(subscribed_at);
    if cycle_start(subscribed_at, index) > today {
        index -= 1;
    }
    Cycle {
        index,
        start: cycle_start(subscribed_at, index),
        end: cycle_start(subscribed_at, index + 1),
    }
}

/// The calendar month in UTC that holds `now` (the cycles without a
/// licence). Its index counts months since year 0.
pub fn calendar_month_of(now: i64) -> Cycle {
    let today = day_of(now);
    let first = Date::from_calendar_date(today.year(), today.month(), 1).unwrap_or(today);
    let month = cycle_of(first, now);
    Cycle {
        index: month_number(first),
        ..month
    }
}

/// What the cycle after the last of `used` carries in: each cycle's words
/// beyond `limit`, counting what it carried in itself. `used` lists the
/// words of consecutive cycles, oldest first, starting with the first cycle
/// of the subscription (which carries nothing in).
pub fn carried(limit: i64, used: &[i64]) -> i64 {
    used.iter().fold(0i64, |carry, &words| {
        carry.saturating_add(words).saturating_sub(limit).max(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn at(date: Date) -> i64 {
        midnight(date)
    }

    #[test]
    fn cycles_start_on_the_subscription_day() {
        let sub = date!(2026 - 03 - 14);
        let c = cycle_of(sub, at(date!(2026 - 03 - 14)));
        assert_eq!((c.index, c.start, c.end), (0, sub, date!(2026 - 04 - 14)));
        // The last second of a cycle is still in it.
        let c = cycle_of(sub, at(date!(2026 - 04 - 14)) - 1);
        assert_eq!((c.index, c.start), (0, sub));
        let c = cycle_of(sub, at(date!(2026 - 04 - 14)));
        assert_eq!(
            (c.index, c.start, c.end),
            (1, date!(2026 - 04 - 14), date!(2026 - 05 - 14))
        );
        let c = cycle_of(sub, at(date!(2027 - 01 - 02)));
        assert_eq!(
            (c.index, c.start, c.end),
            (9, date!(2026 - 12 - 14), date!(2027 - 01 - 14))
        );
        // Before the subscription: cycles run backwards on the same day.
        let c = cycle_of(sub, at(date!(2026 - 03 - 13)));
        assert_eq!((c.index, c.start, c.end), (-1, date!(2026 - 02 - 14), sub));
        assert_eq!(c.end_ts() - c.start_ts(), 28 * 86_400);
    }

    #[test]
    fn a_day_the_month_lacks_is_its_last_day() {
        let sub = date!(2026 - 01 - 31);
        let starts: Vec<Date> = (0..5).map(|k| cycle_start(sub, k)).collect();
        assert_eq!(
            starts,
            [
                date!(2026 - 01 - 31),
                date!(2026 - 02 - 28),
                date!(2026 - 03 - 31),
                date!(2026 - 04 - 30),
                date!(2026 - 05 - 31),
            ]
        );
        let c = cycle_of(sub, at(date!(2026 - 04 - 29)));
        assert_eq!(
            (c.start, c.end),
            (date!(2026 - 03 - 31), date!(2026 - 04 - 30))
        );
        let c = cycle_of(sub, at(date!(2026 - 04 - 30)));
        assert_eq!(
            (c.index, c.start, c.end),
            (3, date!(2026 - 04 - 30), date!(2026 - 05 - 31))
        );
    }

    #[test]
    fn leap_years_give_february_its_29th() {
        let sub = date!(2024 - 01 - 30);
        assert_eq!(cycle_start(sub, 1), date!(2024 - 02 - 29));
        assert_eq!(cycle_start(sub, 13), date!(2025 - 02 - 28));
        let leap_day = date!(2024 - 02 - 29);
        assert_eq!(cycle_start(leap_day, 12), date!(2025 - 02 - 28));
        assert_eq!(cycle_start(leap_day, 48), date!(2028 - 02 - 29));
        assert_eq!(cycle_start(leap_day, 1), date!(2024 - 03 - 29));
        let c = cycle_of(leap_day, at(date!(2025 - 02 - 28)));
        assert_eq!(
            (c.index, c.start, c.end),
            (12, date!(2025 - 02 - 28), date!(2025 - 03 - 29))
        );
        let c = cycle_of(leap_day, at(date!(2025 - 02 - 27)));
        assert_eq!((c.index, c.start), (11, date!(2025 - 01 - 29)));
    }

    #[test]
    fn years_roll_over_both_ways() {
        let sub = date!(2025 - 11 - 15);
        assert_eq!(cycle_start(sub, 2), date!(2026 - 01 - 15));
        assert_eq!(cycle_start(sub, -11), date!(2024 - 12 - 15));
        assert_eq!(cycle_start(sub, 14), date!(2027 - 01 - 15));
    }

    #[test]
    fn calendar_months_without_a_licence() {
        let c = calendar_month_of(at(date!(2026 - 12 - 15)) + 3600);
        assert_eq!(
            (c.start, c.end),
            (date!(2026 - 12 - 01), date!(2027 - 01 - 01))
        );
        let d = calendar_month_of(at(date!(2027 - 01 - 01)));
        assert_eq!(d.index, c.index + 1);
    }

    #[test]
    fn overrun_is_carried_and_chains() {
        assert_eq!(carried(100, &[]), 0);
        assert_eq!(carried(100, &[80]), 0);
        assert_eq!(carried(100, &[100]), 0);
        assert_eq!(carried(100, &[130]), 30);
        // 130 → 30 carried; 30 + 90 = 120 → 20 carried; 20 + 50 → 0.
        assert_eq!(carried(100, &[130, 90]), 20);
        assert_eq!(carried(100, &[130, 90, 50]), 0);
        // A large overrun eats several cycles.
        assert_eq!(carried(100, &[350, 0]), 150);
        assert_eq!(carried(100, &[350, 0, 0]), 50);
        assert_eq!(carried(100, &[350, 0, 0, 0]), 0);
        // No limit reached in a cycle: nothing carried past it.
        assert_eq!(carried(0, &[5, 5]), 10);
    }
}

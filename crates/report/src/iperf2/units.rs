//! iperf 2's number formats: its adaptive byte and bit units (sizes in powers
//! of 1024, rates in powers of 1000, always four places wide), the interval
//! stamp, the loss percentage, NetPwr and the wall-clock dates.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::cfmt;
use crate::start::civil_date;

/// A number in bytes printed as iperf 2 prints sizes and rates: `letter` is a
/// `-f` letter (`a`/`A` adaptive, `b k m g` bits, `B K M G` bytes). Bit
/// letters scale by 1000 and byte letters by 1024. The suffix is singular
/// (`KByte`, `Mbit`); the row layouts append the plural `s`.
pub(crate) fn size(bytes: f64, letter: char) -> String {
    const BYTE: [&str; 4] = ["Byte", "KByte", "MByte", "GByte"];
    const BIT: [&str; 4] = ["bit", "Kbit", "Mbit", "Gbit"];
    let bits = !letter.is_ascii_uppercase();
    let (mut n, base) = if bits {
        (bytes * 8.0, 1000.0)
    } else {
        (bytes, 1024.0)
    };
    let conv = match letter.to_ascii_uppercase() {
        'B' => 0,
        'K' => 1,
        'M' => 2,
        'G' => 3,
        _ => {
            let mut c = 0;
            let mut t = n;
            while t >= base && c < 3 {
                t /= base;
                c += 1;
            }
            c
        }
    };
    n /= f64::powi(base, conv as i32);
    let label = if bits { BIT[conv] } else { BYTE[conv] };
    // Four places: #.###, #.##, ##.#, then a right-aligned integer.
    let num = if n < 0.9995 {
        format!("{n:4.3}")
    } else if n < 9.995 {
        format!("{n:4.2}")
    } else if n < 99.95 {
        format!("{n:4.1}")
    } else {
        format!("{n:4.0}")
    };
    format!("{num} {label}")
}

/// The transfer column: bytes with the byte form of the `-f` letter, plural.
pub(crate) fn transfer(bytes: u64, format: Option<char>) -> String {
    let letter = format.unwrap_or('a').to_ascii_uppercase();
    format!("{}s", size(bytes as f64, letter))
}

/// The bandwidth column (without `/sec`): bytes over seconds, plural.
pub(crate) fn rate(bytes: u64, secs: f64, format: Option<char>) -> String {
    let per_sec = if secs > 0.0 { bytes as f64 / secs } else { 0.0 };
    format!("{}s", size(per_sec, format.unwrap_or('a')))
}

/// Bits per second as the CSV rows print it: an integer, truncated.
pub(crate) fn csv_bps(bytes: u64, secs: f64) -> i64 {
    if secs > 0.0 {
        (bytes as f64 * 8.0 / secs) as i64
    } else {
        0
    }
}

/// `0.00-1.00`: 2.2.1 prints interval bounds with two decimals.
pub(crate) fn interval(start: f64, end: f64) -> String {
    format!("{start:4.2}-{end:4.2}")
}

/// Loss as iperf 2 prints it in text rows: `%.2g` of the percentage.
pub(crate) fn loss_pct(lost: u64, total: u64) -> String {
    let pct = if total > 0 {
        100.0 * lost as f64 / total as f64
    } else {
        0.0
    };
    cfmt::general(pct, 2)
}

/// Loss in CSV rows: `%.3f` of the percentage.
pub(crate) fn csv_loss_pct(lost: u64, total: u64) -> String {
    let pct = if total > 0 {
        100.0 * lost as f64 / total as f64
    } else {
        0.0
    };
    format!("{pct:.3}")
}

/// NetPwr: throughput in bytes per second over a delay in seconds, scaled by
/// 1e-6, with iperf 2's precision steps; `NAN` when the delay is unknown.
pub(crate) fn netpwr(bytes: u64, secs: f64, delay_s: f64) -> String {
    if delay_s == 0.0 || secs <= 0.0 {
        return "NAN".into();
    }
    let p = 1e-6 * (bytes as f64 / secs / delay_s);
    if p < -1e7 {
        "OBL".into()
    } else if p > 100.0 {
        format!("{p:.0}")
    } else if p > 10.0 {
        format!("{p:.2}")
    } else {
        format!("{p:.6}")
    }
}

/// Packets per second of `count` over `secs`.
pub(crate) fn pps(count: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}

/// A broken-down wall-clock time in the zone of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Civil {
    pub(crate) year: i64,
    pub(crate) month: i64,
    pub(crate) day: i64,
    pub(crate) hour: i64,
    pub(crate) min: i64,
    pub(crate) sec: i64,
    pub(crate) micros: u32,
}

/// `at` shifted by `offset_secs` east of UTC, broken down.
pub(crate) fn civil(at: SystemTime, offset_secs: i32) -> Civil {
    let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64 + i64::from(offset_secs);
    let (year, month, day) = civil_date(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    Civil {
        year,
        month,
        day,
        hour: rem / 3600,
        min: rem % 3600 / 60,
        sec: rem % 60,
        micros: d.subsec_micros(),
    }
}

/// `2026-11-25 16:08:23.556`: the connection line's date, with milliseconds.
pub(crate) fn date_ms(c: Civil) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.min,
        c.sec,
        c.micros / 1000
    )
}

/// `20261125160916`: the basic CSV stamp.
pub(crate) fn csv_stamp(c: Civil) -> String {
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        c.year, c.month, c.day, c.hour, c.min, c.sec
    )
}

/// `+0000:20261125160921.224986`: the enhanced CSV stamp (zone offset, colon,
/// microseconds).
pub(crate) fn csv_stamp_enhanced(c: Civil, offset_secs: i32) -> String {
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let off = offset_secs.unsigned_abs();
    format!(
        "{sign}{:02}{:02}:{}.{:06}",
        off / 3600,
        off % 3600 / 60,
        csv_stamp(c),
        c.micros
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    proptest! {
        /// Adaptive sizes always take four places and a unit, and the
        /// printed figure is the value within its rounding.
        #[test]
        fn adaptive_is_four_places_and_faithful(bytes in 0u64..(1u64 << 40), bits in any::<bool>()) {
            let letter = if bits { 'a' } else { 'A' };
            let s = size(bytes as f64, letter);
            // Zero is the one value below 1 that adaptive sizes print:
            // "0.000", five places, as 2.2.1's `%4.3f`.
            let (num, unit) = s.rsplit_once(' ').unwrap();
            let scale: f64 = match (bits, unit) {
                (false, "Byte") => 1.0,
                (false, "KByte") => 1024.0,
                (false, "MByte") => 1024.0 * 1024.0,
                (false, "GByte") => 1024.0 * 1024.0 * 1024.0,
                (true, "bit") => 0.125,
                (true, "Kbit") => 125.0,
                (true, "Mbit") => 125e3,
                (true, "Gbit") => 125e6,
                _ => panic!("unit {unit:?} in {s:?}"),
            };
            let v: f64 = num.trim().parse().unwrap_or(f64::NAN);
            let half = match num.split_once('.') {
                Some((_, f)) => 0.5 * 10f64.powi(-(f.len() as i32)),
                None => 0.5,
            };
            let real = bytes as f64 / scale;
            prop_assert!((v - real).abs() <= half + 1e-9, "{s} for {bytes}");
        }
    }

    const KI: f64 = 1024.0;

    #[test]
    fn adaptive_bytes_are_1024_based_and_four_places_wide() {
        // Values from the 2.2.1 captures.
        assert_eq!(size(2.51 * KI * KI * KI, 'A'), "2.51 GByte");
        assert_eq!(size(610.0 * KI, 'A'), " 610 KByte");
        assert_eq!(size(128.0 * KI, 'A'), " 128 KByte");
        assert_eq!(size(16.0 * KI, 'A'), "16.0 KByte");
        assert_eq!(size(4.0 * KI * KI, 'A'), "4.00 MByte");
        assert_eq!(size(208.0 * KI, 'A'), " 208 KByte");
        assert_eq!(size(1000.0 * KI * KI, 'A'), "1000 MByte");
        assert_eq!(size(100.0 * KI * KI, 'A'), " 100 MByte");
        assert_eq!(size(12.1 * KI * KI, 'A'), "12.1 MByte");
        assert_eq!(size(1023.0, 'A'), "1023 Byte");
        assert_eq!(size(1024.0, 'A'), "1.00 KByte");
    }

    #[test]
    fn four_places_at_the_rounding_edges() {
        // 9.995 and 99.95 would round up into a fifth place.
        assert_eq!(size(9.994 * KI, 'A'), "9.99 KByte");
        assert_eq!(size(9.996 * KI, 'A'), "10.0 KByte");
        assert_eq!(size(99.94 * KI, 'A'), "99.9 KByte");
        assert_eq!(size(99.96 * KI, 'A'), " 100 KByte");
        assert_eq!(size(999.6e3 / 8.0, 'a'), "1000 Kbit");
        assert_eq!(size(1000.0e3 / 8.0, 'a'), "1.00 Mbit");
    }

    #[test]
    fn below_one_unit_three_decimals() {
        // 2.2.1's byte_snprintf: under 0.9995 of the unit, `%4.3f`.
        assert_eq!(size(64.0, 'K'), "0.062 KByte");
        assert_eq!(size(0.0, 'A'), "0.000 Byte");
        assert_eq!(size(0.0, 'a'), "0.000 bit");
        assert_eq!(size(1023.0, 'K'), "0.999 KByte");
        assert_eq!(size(1023.5, 'K'), "1.00 KByte");
    }

    #[test]
    fn adaptive_bits_are_1000_based() {
        // 21.5 Gbits/sec, 1000 Kbits/sec, 1.01 Mbits/sec, 5.00 Mbits/sec.
        assert_eq!(size(21.5e9 / 8.0, 'a'), "21.5 Gbit");
        assert_eq!(size(999.8e3 / 8.0, 'a'), "1000 Kbit");
        assert_eq!(size(1.01e6 / 8.0, 'a'), "1.01 Mbit");
        assert_eq!(size(5.0e6 / 8.0, 'a'), "5.00 Mbit");
        assert_eq!(size(10.0e6 / 8.0, 'a'), "10.0 Mbit");
        assert_eq!(size(2.77e9 / 8.0, 'a'), "2.77 Gbit");
        assert_eq!(size(123.0e6 / 8.0, 'a'), " 123 Mbit");
    }

    #[test]
    fn fixed_letters_do_not_adapt() {
        assert_eq!(size(1470.0, 'B'), "1470 Byte");
        assert_eq!(size(64.0, 'B'), "64.0 Byte");
        assert_eq!(size(131_072.0, 'B'), "131072 Byte");
        assert_eq!(size(2.0 * KI * KI, 'K'), "2048 KByte");
        assert_eq!(size(1.25e6, 'm'), "10.0 Mbit");
        assert_eq!(size(1.25e6, 'k'), "10000 Kbit");
        assert_eq!(size(1.25e9, 'g'), "10.0 Gbit");
    }

    #[test]
    fn row_columns_are_plural() {
        assert_eq!(transfer(2_503_410, None), "2.39 MBytes");
        assert_eq!(rate(2_503_410, 2.0, None), "10.0 Mbits");
        assert_eq!(rate(2_503_410, 2.0, Some('k')), "10014 Kbits");
        assert_eq!(transfer(2_503_410, Some('k')), "2445 KBytes");
        assert_eq!(rate(2_503_410, 2.0, Some('K')), "1222 KBytes");
        assert_eq!(rate(5, 0.0, None), "0.000 bits");
    }

    #[test]
    fn loss_is_two_significant_digits() {
        // (0.059%), (0.12%), (34%), (1.2%), (0.45%), (0%), (50%).
        assert_eq!(loss_pct(1, 1703), "0.059");
        assert_eq!(loss_pct(1, 852), "0.12");
        assert_eq!(loss_pct(87, 259), "34");
        assert_eq!(loss_pct(2875, 247_596), "1.2");
        assert_eq!(loss_pct(1049, 235_418), "0.45");
        assert_eq!(loss_pct(0, 1703), "0");
        assert_eq!(loss_pct(85, 171), "50");
        assert_eq!(loss_pct(3924, 483_015), "0.81");
        assert_eq!(loss_pct(0, 0), "0");
        assert_eq!(csv_loss_pct(0, 851), "0.000");
    }

    #[test]
    fn netpwr_is_bytes_per_second_over_delay() {
        // tcp-e: 1.67 GBytes in 1 s at 68 us RTT printed 26411009.
        let bytes = 1_795_948_544u64;
        assert_eq!(netpwr(bytes, 1.0, 68e-6), "26411008");
        assert_eq!(netpwr(1_000_000, 1.0, 0.02), "50.00");
        assert_eq!(netpwr(1_000, 1.0, 0.02), "0.050000");
        assert_eq!(netpwr(1_000, 1.0, 0.0), "NAN");
    }

    #[test]
    fn csv_rates_truncate_like_c() {
        assert_eq!(csv_bps(2_140_012_608, 1.0), 17_120_100_864);
        assert_eq!(csv_bps(1_250_970, 1.0), 10_007_760);
        assert_eq!(csv_bps(10, 3.0), 26);
    }

    #[test]
    fn dates_and_stamps() {
        // 2026-11-25 16:08:23.556 UTC.
        let at = UNIX_EPOCH + Duration::from_micros(1_795_622_903_556_789);
        let c = civil(at, 0);
        assert_eq!(date_ms(c), "2026-11-25 16:08:23.556");
        assert_eq!(csv_stamp(c), "20261125160823");
        assert_eq!(csv_stamp_enhanced(c, 0), "+0000:20261125160823.556789");
        assert_eq!(
            csv_stamp_enhanced(civil(at, -5 * 3600 - 1800), -5 * 3600 - 1800),
            "-0530:20261125103823.556789"
        );
        assert_eq!(interval(0.0, 2.0128), "0.00-2.01");
        assert_eq!(interval(10.0, 11.0), "10.00-11.00");
    }
}

//! Numbers as the dashboard shows them: an ISO 4217 currency with its symbol and minor units
//! (`$3,969.55`, `₪1,204.00`, `¥12,000`), a count with grouping (`1,204`), any other unit as
//! the brief gives it after the number (`12.5 %`, `1,204 orders`). Grouping and separators come
//! from ICU4X (`icu_decimal`), currency symbols and minor units from `iso_currency`: no table of
//! our own.

use icu_decimal::DecimalFormatter;
use icu_decimal::input::Decimal;
use iso_currency::Currency;

thread_local! {
    /// The formatter of every number (the root locale: `,` groups, `.` before the fraction),
    /// one per thread: ICU4X's data is not `Sync` without its `sync` feature.
    static DECIMALS: Option<DecimalFormatter> = DecimalFormatter::try_new(Default::default(), Default::default()).ok();
}

/// Beyond this magnitude a value is not scaled to an integer of minor units (it would not fit).
const LARGEST: f64 = 1e15;

/// `value` in `unit`, for people.
pub fn amount(value: f64, unit: Option<&str>) -> String {
    let unit = unit.map(str::trim).filter(|u| !u.is_empty());
    match unit.and_then(currency) {
        Some(currency) => money(value, currency),
        None => match unit {
            None | Some("count") => number(value),
            Some("%") => format!("{}%", number(value)),
            Some(unit) => format!("{} {unit}", number(value)),
        },
    }
}

/// `value` with grouping and at most two decimals, trailing zeros dropped (`1,204`, `12.5`).
pub fn number(value: f64) -> String {
    if !value.is_finite() || value.abs() >= LARGEST {
        return value.to_string();
    }
    let hundredths = (value * 100.0).round() as i64;
    let digits = match hundredths % 100 {
        0 => 0,
        n if n % 10 == 0 => 1,
        _ => 2,
    };
    grouped(hundredths / 10_i64.pow(2 - digits), digits)
}

/// The currency a unit names: a three-letter ISO 4217 code (`USD`, `usd`).
fn currency(unit: &str) -> Option<Currency> {
    (unit.len() == 3).then(|| Currency::from_code(&unit.to_ascii_uppercase())).flatten()
}

/// `value` in `currency`: its minor units always shown, its symbol before the number where the
/// symbol is its own (`$` for USD only), the code otherwise (`CAD 1,204.00`).
fn money(value: f64, currency: Currency) -> String {
    let code = currency.code();
    let Some(exponent) = currency.exponent() else {
        return format!("{} {code}", number(value));
    };
    let exponent = u32::from(exponent.min(4));
    if !value.is_finite() || value.abs() >= LARGEST {
        return format!("{value} {code}");
    }
    let minor = (value.abs() * 10_f64.powi(exponent as i32)).round() as i64;
    let sign = if value < 0.0 && minor != 0 { "-" } else { "" };
    let number = grouped(minor, exponent);
    let symbol = currency.symbol().to_string();
    let shared = symbol == "$" && code != "USD";
    if shared || symbol == "¤" || symbol.chars().all(|c| c.is_ascii_alphabetic()) {
        format!("{sign}{code} {number}")
    } else {
        format!("{sign}{symbol}{number}")
    }
}

/// `scaled / 10^digits`, grouped, with exactly `digits` decimals.
fn grouped(scaled: i64, digits: u32) -> String {
    let mut decimal = Decimal::from(scaled);
    decimal.multiply_pow10(-(digits as i16));
    DECIMALS.with(|formatter| match formatter {
        Some(formatter) => formatter.format(&decimal).to_string(),
        None => decimal.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn currencies_take_their_symbol_and_minor_units() {
        assert_eq!(amount(3969.55, Some("USD")), "$3,969.55");
        assert_eq!(amount(1204.0, Some("ILS")), "₪1,204.00");
        assert_eq!(amount(12000.4, Some("JPY")), "¥12,000");
        assert_eq!(amount(0.5, Some("eur")), "€0.50");
        assert_eq!(amount(-12.0, Some("GBP")), "-£12.00");
        assert_eq!(amount(1204.0, Some("CAD")), "CAD 1,204.00", "a `$` of its own is USD's");
        assert_eq!(amount(1.2345, Some("BHD")), format!("{}1.235", Currency::BHD.symbol()));
        assert_eq!(amount(-0.001, Some("USD")), "$0.00", "no negative zero");
    }

    #[test]
    fn counts_and_other_units() {
        assert_eq!(amount(1204.0, None), "1,204");
        assert_eq!(amount(1204.0, Some("count")), "1,204");
        assert_eq!(amount(2_340_000.0, Some("")), "2,340,000");
        assert_eq!(amount(704.4, None), "704.4");
        assert_eq!(amount(0.125, Some("%")), "0.13%");
        assert_eq!(amount(1204.0, Some("orders")), "1,204 orders");
        assert_eq!(amount(1204.0, Some("ABC")), "1,204 ABC", "not an ISO code");
        assert_eq!(number(-3.0), "-3");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1e20), "100000000000000000000");
    }
}

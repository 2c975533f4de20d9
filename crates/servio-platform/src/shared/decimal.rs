//! Arithmetic on site figures shown as a person would write it: a difference or a sum of
//! decimal figures held as `f64` is rounded back to the decimal places of its operands.
//!
//! Why: `3831.41 - 3969.55` in binary floating point is `-138.14000000000033`, which the JSON
//! API served verbatim. The figures a site sends are decimals (`3969.55`, `"$936.24"`), so the
//! exact difference or sum of two of them has no more decimal places than the longer of the two;
//! rounding to that many places removes the binary noise and nothing else.
//!
//! The rule: an operand's places are those of its shortest decimal form (what `{}` prints and
//! what round-trips, `936.2` for `936.20`); the result is rounded to the largest count among the
//! operands. This is exact whenever each operand is held within half a unit of its last place,
//! true of every figure of fewer than 15 significant digits; beyond that, `f64` itself cannot
//! hold the figure and the rounding is as close as the inputs allow.

/// The decimal places of `value`'s shortest round-trip form: 2 for `3969.55`, 0 for `12.0`.
pub fn places(value: f64) -> usize {
    if !value.is_finite() {
        return 0;
    }
    // Rust prints floats without an exponent, so the places are what follows the point.
    let text = value.to_string();
    text.split_once('.').map_or(0, |(_, fraction)| fraction.len())
}

/// `value` rounded to the nearest decimal of `places` places (formatting rounds the exact binary
/// value, so `2.675`, held just below, gives `2.67`), read back as the nearest `f64`, whose
/// shortest form is that decimal.
pub fn round(value: f64, places: usize) -> f64 {
    if !value.is_finite() {
        return value;
    }
    // The formatted decimal is a valid float literal; should parsing ever fail, the unrounded
    // value is still the right figure, only noisier.
    format!("{value:.places$}").parse().unwrap_or(value)
}

/// `result`, computed from `operands` by subtraction or addition, rounded to the largest number
/// of decimal places among them (see the module's rule).
pub fn round_to_operands(result: f64, operands: &[f64]) -> f64 {
    let places = operands.iter().map(|&operand| places(operand)).max().unwrap_or(0);
    round(result, places)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_of_figures() {
        let cases = [(3969.55, 2), (3831.41, 2), (12.0, 0), (0.1, 1), (-0.005, 3), (1e21, 0), (f64::NAN, 0)];
        for (value, want) in cases {
            assert_eq!(places(value), want, "{value}");
        }
    }

    /// Noise like the walk-through's `-138.1400000000001`: the raw difference is noisy, the
    /// rounded one is the decimal a person gets by hand.
    #[test]
    fn differences_and_sums_are_the_decimals_of_their_operands() {
        assert_ne!(3831.41 - 3969.55, -138.14, "the premise: binary noise in the raw difference");
        let cases = [
            (3831.41 - 3969.55, vec![3831.41, 3969.55], -138.14),
            (0.1 + 0.2, vec![0.1, 0.2], 0.3),
            (100.1 + 200.2, vec![100.1, 200.2], 300.3),
            (1.005 - 1.0, vec![1.005, 1.0], 0.005),
            (120.0 - 100.0, vec![120.0, 100.0], 20.0),
            (-2.5 - 0.25, vec![-2.5, 0.25], -2.75),
        ];
        for (result, operands, want) in cases {
            let rounded = round_to_operands(result, &operands);
            assert_eq!(rounded, want, "{result} from {operands:?}");
            assert_eq!(rounded.to_string(), want.to_string());
        }
    }

    #[test]
    fn round_keeps_what_it_cannot_round() {
        assert!(round(f64::NAN, 2).is_nan());
        assert_eq!(round(f64::INFINITY, 2), f64::INFINITY);
        assert_eq!(round(2.675, 2), 2.67, "rounds the binary value, which is just below 2.675");
    }
}

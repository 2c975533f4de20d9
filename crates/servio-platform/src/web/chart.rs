//! A metric's periods as an SVG chart for the dashboard: the value axis (lowest, middle and
//! highest, formatted for the unit), the date axis (first, middle and last period), the
//! metric's line, and the comparison periods' line (§8) dashed behind it. A period with nothing
//! collected is a gap in its line, never a zero. Every collected point carries a `<title>` with
//! its period and value (and its comparison's), so hovering shows them without JavaScript.
//! Everything a site wrote (the unit) is escaped.

use std::fmt::Write;

use crate::shared::format;

/// What one chart shows.
pub struct Chart<'a> {
    /// Each period's label, oldest first (its first local date).
    pub periods: &'a [String],
    /// Each period's value; `None` where nothing was collected.
    pub values: &'a [Option<f64>],
    /// The value of each period's comparison period, where it was collected.
    pub comparison: &'a [Option<f64>],
    /// The metric's unit, for the labels.
    pub unit: Option<&'a str>,
}

const WIDTH: f64 = 480.0;
const HEIGHT: f64 = 150.0;
/// Room for the value labels on the left and the dates below.
const LEFT: f64 = 72.0;
const BOTTOM: f64 = 20.0;
const TOP: f64 = 8.0;
const RIGHT: f64 = 8.0;
/// Above this many periods the points are not drawn, only hovered.
const DRAWN_POINTS: usize = 62;

impl Chart<'_> {
    /// The chart as an `<svg>` element; empty when nothing was collected at all.
    pub fn svg(&self) -> String {
        let all = self.values.iter().chain(self.comparison).flatten().copied();
        let Some((low, high)) =
            all.fold(None, |range: Option<(f64, f64)>, v| Some(range.map_or((v, v), |(l, h)| (l.min(v), h.max(v)))))
        else {
            return String::new();
        };
        // Amounts read against zero; a series far from it (or below it) gets its own range. A
        // flat series is drawn against zero, or a unit below it, so its labels differ.
        let low = match (low, high) {
            (low, high) if low > 0.0 && (low < high / 2.0 || low == high) => 0.0,
            (low, high) if low == high => low - 1.0,
            (low, _) => low,
        };
        let span = high - low;
        let scale = Scale { low, span, count: self.periods.len().max(1) };
        let mut svg = format!(
            "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\">",
            escape(&self.description())
        );
        self.axes(&mut svg, &scale, high);
        for (series, class) in [(self.comparison, "comparison"), (self.values, "series")] {
            for segment in segments(series) {
                let points: Vec<String> =
                    segment.iter().map(|&(i, v)| format!("{:.1},{:.1}", scale.x(i), scale.y(v))).collect();
                let _ = write!(svg, "<polyline class=\"{class}\" points=\"{}\"/>", points.join(" "));
            }
        }
        self.points(&mut svg, &scale);
        svg.push_str("</svg>");
        svg
    }

    /// What the chart shows, for screen readers.
    fn description(&self) -> String {
        let collected = self.values.iter().flatten().count();
        match (self.periods.first(), self.periods.last()) {
            (Some(first), Some(last)) => format!("{collected} periods collected from {first} to {last}"),
            _ => "no periods".into(),
        }
    }

    /// Grid lines with the value labels, and the first, middle and last dates.
    fn axes(&self, svg: &mut String, scale: &Scale, high: f64) {
        for value in [scale.low, (scale.low + high) / 2.0, high] {
            let y = scale.y(value);
            let label = escape(&format::amount(value, self.unit));
            let _ = write!(
                svg,
                "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0
            );
        }
        let last = self.periods.len().saturating_sub(1);
        let mut marks = vec![(0, "start")];
        if last >= 2 {
            marks.push((last / 2, "middle"));
        }
        if last >= 1 {
            marks.push((last, "end"));
        }
        for (i, anchor) in marks {
            let _ = write!(
                svg,
                "<text class=\"axis\" x=\"{:.1}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
                scale.x(i),
                HEIGHT - 4.0,
                escape(&self.periods[i])
            );
        }
    }

    /// A point per collected period, with its title.
    fn points(&self, svg: &mut String, scale: &Scale) {
        let drawn = self.periods.len() <= DRAWN_POINTS;
        for (i, value) in self.values.iter().enumerate() {
            let Some(value) = *value else { continue };
            let mut title = format!("{}: {}", self.periods[i], format::amount(value, self.unit));
            if let Some(Some(before)) = self.comparison.get(i) {
                let _ = write!(title, " (comparison period: {})", format::amount(*before, self.unit));
            }
            let _ = write!(
                svg,
                "<circle class=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"><title>{}</title></circle>",
                if drawn { "point" } else { "point hidden" },
                scale.x(i),
                scale.y(value),
                escape(&title)
            );
        }
    }
}

/// Where values and periods fall in the drawing.
struct Scale {
    low: f64,
    span: f64,
    count: usize,
}

impl Scale {
    fn x(&self, i: usize) -> f64 {
        let step = if self.count > 1 { (WIDTH - LEFT - RIGHT) / (self.count - 1) as f64 } else { 0.0 };
        LEFT + i as f64 * step
    }

    fn y(&self, value: f64) -> f64 {
        HEIGHT - BOTTOM - (value - self.low) / self.span * (HEIGHT - BOTTOM - TOP)
    }
}

/// The runs of consecutive collected periods, each as (index, value): a gap ends a run.
fn segments(series: &[Option<f64>]) -> Vec<Vec<(usize, f64)>> {
    let mut runs: Vec<Vec<(usize, f64)>> = vec![Vec::new()];
    for (i, value) in series.iter().enumerate() {
        match value {
            Some(v) => runs.last_mut().expect("one run at least").push((i, *v)),
            None => runs.push(Vec::new()),
        }
    }
    // A lone point is drawn as its circle.
    runs.into_iter().filter(|run| run.len() > 1).collect()
}

/// `text` safe inside SVG text and attributes.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn periods(n: usize) -> Vec<String> {
        (1..=n).map(|d| format!("2026-11-{d:02}")).collect()
    }

    #[test]
    fn gaps_break_the_line_and_are_never_zero() {
        let periods = periods(5);
        let values = [Some(10.0), Some(20.0), None, Some(30.0), Some(10.0)];
        let svg = Chart { periods: &periods, values: &values, comparison: &[None; 5], unit: Some("USD") }.svg();
        assert_eq!(svg.matches("class=\"series\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 4, "a point per collected period: {svg}");
        assert!(svg.contains("<title>2026-11-04: $30.00</title>"), "{svg}");
        assert!(svg.contains(">$0.00</text>") && svg.contains(">$30.00</text>"), "value axis: {svg}");
        assert!(svg.contains(">2026-11-01</text>") && svg.contains(">2026-11-05</text>"), "date axis: {svg}");
        let lone = Chart { periods: &periods[..3], values: &[Some(1.0), None, Some(2.0)], comparison: &[], unit: None };
        assert_eq!(lone.svg().matches("<polyline").count(), 0);
        assert_eq!(Chart { periods: &periods[..2], values: &[None, None], comparison: &[], unit: None }.svg(), "");
    }

    #[test]
    fn the_comparison_is_a_second_line_and_in_the_titles() {
        let periods = periods(3);
        let values = [Some(12.0), Some(14.0), Some(9.0)];
        let comparison = [Some(10.0), Some(10.0), None];
        let svg = Chart { periods: &periods, values: &values, comparison: &comparison, unit: None }.svg();
        assert_eq!(svg.matches("class=\"comparison\"").count(), 1, "{svg}");
        assert!(svg.contains("<title>2026-11-02: 14 (comparison period: 10)</title>"), "{svg}");
    }

    #[test]
    fn a_flat_series_has_three_different_value_labels() {
        let svg = Chart { periods: &periods(1), values: &[Some(12.5)], comparison: &[None], unit: Some("USD") }.svg();
        for label in ["$0.00", "$6.25", "$12.50"] {
            assert_eq!(svg.matches(&format!(">{label}</text>")).count(), 1, "{label} in {svg}");
        }
        let zero =
            Chart { periods: &periods(2), values: &[Some(0.0), Some(0.0)], comparison: &[None, None], unit: None };
        let svg = zero.svg();
        assert!(svg.contains(">-1</text>") && svg.contains(">0</text>") && !svg.contains("NaN"), "{svg}");
    }

    #[test]
    fn what_a_site_wrote_is_escaped() {
        let periods = periods(2);
        let svg =
            Chart { periods: &periods, values: &[Some(1.0), Some(2.0)], comparison: &[], unit: Some("<b>\"x\"") }.svg();
        assert!(!svg.contains("<b>") && svg.contains("&lt;b&gt;&quot;x&quot;"), "{svg}");
    }
}

//! Durations as users type them (`30s`, `1m30s`, `500ms`) and as messages show them.
use std::time::Duration;

/// Parses durations the way kubectl's --request-timeout does: a bare number is seconds,
/// otherwise a sequence of number+unit with units h, m, s, ms.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let bad = || format!("invalid duration {text:?}: use e.g. 30s, 1m30s, 500ms or 0");
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        // Checked: a duration too long to represent is bad input, not a crash.
        let part = Duration::try_from_secs_f64(value * scale).map_err(|_| bad())?;
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// Renders a duration the way it was most likely typed (`5s`, `1m30s`, `250ms`).
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 {
        out += &format!("{s}s");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_kubectl() {
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "s", "5x", "-1s", "1m s", "ms5"] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    /// Used to panic in `Duration::from_secs_f64` ("overflow when converting float to
    /// duration").
    #[test]
    fn a_duration_too_long_to_represent_is_an_error() {
        for huge in [
            "99999999999999999999999h",
            "1e400s",
            "18446744073709551615s1s",
        ] {
            assert!(parse(huge).is_err(), "{huge}");
        }
        let max = format!("{}s", u64::MAX);
        assert_eq!(
            parse(&max[..max.len() - 1]),
            Ok(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn durations_render_as_typed() {
        assert_eq!(humanize(Duration::from_secs(5)), "5s");
        assert_eq!(humanize(Duration::from_secs(90)), "1m30s");
        assert_eq!(humanize(Duration::from_secs(3600)), "1h");
        assert_eq!(humanize(Duration::from_millis(250)), "250ms");
    }

    #[test]
    fn a_rendered_duration_parses_back() {
        for d in [
            Duration::from_secs(5),
            Duration::from_secs(90),
            Duration::from_secs(3600 * 25 + 61),
            Duration::from_millis(1250),
        ] {
            assert_eq!(parse(&humanize(d)), Ok(d));
        }
    }
}

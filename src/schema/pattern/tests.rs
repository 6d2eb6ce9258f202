use super::*;

use Comparison::{Changed, Equal, Narrowed, Undecided, Widened};

/// Go's pattern `go` as the regex crate runs it (bytes: Go's `\B` is `(?-u:\B)`).
fn go_regex(go: &str) -> regex::bytes::Regex {
    let rust = to_rust(go).unwrap_or_else(|e| panic!("{go}: {e}"));
    regex::bytes::Regex::new(&rust).unwrap_or_else(|e| panic!("{rust}: {e}"))
}

/// Whether Go's pattern `go` matches somewhere in `s`, by the regex crate.
fn go_match(go: &str, s: &str) -> bool {
    go_regex(go).is_match(s.as_bytes())
}

/// `compare`, with every string it gives as evidence checked by the regex crate.
fn checked(old: &str, new: &str) -> Comparison {
    let got = compare(old, new);
    let lost = |w: &str| {
        assert!(go_match(old, w), "{old:?} should accept {w:?}");
        assert!(!go_match(new, w), "{new:?} should reject {w:?}");
    };
    let gained = |w: &str| {
        assert!(!go_match(old, w), "{old:?} should reject {w:?}");
        assert!(go_match(new, w), "{new:?} should accept {w:?}");
    };
    match &got {
        Widened { example } => gained(example),
        Narrowed { witness } => lost(witness),
        Changed { witness, example } => {
            lost(witness);
            if let Some(e) = example {
                gained(e);
            }
        }
        Equal | Undecided { .. } => {}
    }
    got
}

fn widened(example: &str) -> Comparison {
    Widened {
        example: example.into(),
    }
}

fn narrowed(witness: &str) -> Comparison {
    Narrowed {
        witness: witness.into(),
    }
}

fn undecided(got: Comparison, why: &str) {
    match got {
        Undecided { reason } => assert!(reason.contains(why), "{reason:?} lacks {why:?}"),
        other => panic!("undecided ({why}) expected, got {other:?}"),
    }
}

#[test]
fn the_gateway_api_typo_fix_accepts_the_same_strings() {
    let old = r"^[a-zA-Z0-9]([-a-zSA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]+$";
    let new = r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]+$";
    assert_eq!(checked(old, new), Equal);
    assert_eq!(checked(new, old), Equal);
    // Rewritten without changing what is accepted.
    assert_eq!(checked("^[a-z0-9]+$", "^[0-9a-z]+$"), Equal);
    assert_eq!(checked("^(a|b)+$", "^[ab]+$"), Equal);
    assert_eq!(checked("^a*$", "^(a+)?$"), Equal);
}

#[test]
fn an_unanchored_pattern_matches_anywhere() {
    // `a` accepts any string containing an a; `^a` only those starting with one.
    assert_eq!(checked("a", "^a"), narrowed("ba"));
    assert_eq!(checked("^a", "a"), widened("ba"));
    assert_eq!(checked("^a", "^a$"), narrowed("aa"));
    assert_eq!(checked("a", "a.*"), Equal);
    assert_eq!(checked("a", "(?s).*a"), Equal);
    // A pattern that can match the empty string accepts every string.
    assert_eq!(checked("", "^"), Equal);
    assert_eq!(checked("$", "a*"), Equal);
    assert_eq!(checked("^$", ""), widened("a"));
    // The shortest evidence, empty when that is it.
    assert_eq!(
        checked("^$", "."),
        Changed {
            witness: "".into(),
            example: Some("a".into()),
        }
    );
}

#[test]
fn anchors_and_line_modes_are_those_of_go() {
    // Without (?m), $ is the end of the text only (no final newline allowed, unlike Perl).
    assert_eq!(checked("a$", r"a\z"), Equal);
    assert_eq!(checked(r"\Aa", "^a"), Equal);
    assert_eq!(checked("^a", "(?m)^a"), widened("\na"));
    assert_eq!(checked("(?m)a$", "a$"), narrowed("a\n"));
    assert_eq!(checked("^.$", "(?s)^.$"), widened("\n"));
    // One character, not one byte.
    assert_eq!(checked("^.$", "^[^\n]$"), Equal);
    assert_eq!(checked("^.$", "^[a-z]$"), narrowed("0"));
}

#[test]
fn perl_classes_and_word_boundaries_are_ascii_as_in_go() {
    assert_eq!(checked(r"^\d+$", "^[0-9]+$"), Equal);
    assert_eq!(checked(r"^\w+$", "^[0-9A-Za-z_]+$"), Equal);
    assert_eq!(checked(r"^[\w-]+$", "^[-0-9A-Za-z_]+$"), Equal);
    assert_eq!(checked(r"^\D$", "^[^0-9]$"), Equal);
    assert_eq!(checked(r"^[^\W]$", r"^\w$"), Equal);
    // Go's \s has no vertical tab.
    assert_eq!(checked(r"^\s$", "^[\t\n\x0C\r ]$"), Equal);
    assert_eq!(checked(r"^\s$", "^[\t\n\x0B\x0C\r ]$"), widened("\x0B"));
    // é is no word character for Go: a word boundary lies between é and a.
    assert_eq!(checked(r"\ba", "(^|[^0-9A-Za-z_])a"), Equal);
    assert_eq!(checked(r"\Ba", "[0-9A-Za-z_]a"), Equal);
    // In Go \< and \> are the characters.
    assert_eq!(checked(r"\<a\>", "<a>"), Equal);
    // POSIX classes.
    assert_eq!(checked("^[[:alpha:]]+$", "^[A-Za-z]+$"), Equal);
    // Go folds case as the crates do: the long s and the Kelvin sign are letters a-z here.
    assert_eq!(checked("(?i)^[a-z]+$", "^[A-Za-z]+$"), narrowed("\u{17F}"));
}

#[test]
fn unicode_strings_are_compared_as_characters() {
    assert_eq!(checked("^é$", "^..?$"), widened("a"));
    assert_eq!(checked("^..?$", "^é$"), narrowed("a"));
    assert_eq!(checked(r"^\pL$", "^[a-z]$"), narrowed("A"));
    assert_eq!(checked(r"^[^a]$", "^[b-z]$"), narrowed("0"));
    assert_eq!(checked(r"^\p{^Greek}$", r"^\P{Greek}$"), Equal);
    assert!(matches!(checked("^é+$", "^[a-zé]+$"), Widened { .. }));
}

#[test]
fn syntax_not_read_as_go_reads_it_is_undecided() {
    undecided(checked(r"^\Qa.b\E$", "^a"), "pattern '^\\Qa.b\\E$'");
    undecided(checked("^a", "(?x)^ a"), "IgnoreWhitespace");
    undecided(checked("^a", "(?u)^a"), "not have");
    undecided(checked("^[a-z&&b]$", "^b$"), "class set operations");
    undecided(checked("^[a[b]]$", "^b$"), "nested classes");
    undecided(checked(r"^\u0041$", "^A$"), r"\u and \U");
    undecided(checked(r"^\p{gc=L}$", "^A$"), "name=value");
    undecided(checked(r"\b{start}a", "a"), r"\b{...}");
    undecided(checked("a**", "a"), "repetition of a repetition");
    undecided(checked("a{1001}", "a"), "1000");
    undecided(checked(r"\1", "a"), "not read");
    undecided(checked("(?=a)", "a"), "not read");
}

#[test]
fn patterns_too_large_to_compare_are_undecided() {
    // A DFA past its size bound.
    undecided(checked(r"^[\pL\pN]{200}$", "^a"), "too large");
    // Two small DFAs whose product is past its bound: each remembers where in the last 13
    // letters its own letter stands.
    let a = "a[a-c]{12}$";
    let b = "b[a-c]{12}$";
    undecided(checked(a, b), "too many states");
}

#[test]
fn answers_are_kept_per_pair() {
    let (a, b) = ("^kept-[0-9]+$", "^kept-[0-9]*$");
    assert_eq!(compare(a, b), widened("kept-"));
    let key = (a.to_string(), b.to_string());
    assert_eq!(PAIRS.kept(&key), Some(widened("kept-")));
}

#[test]
fn go_patterns_are_rewritten_only_where_the_meaning_differs() {
    assert_eq!(to_rust("^[a-z]+$").unwrap(), "^[a-z]+$");
    assert_eq!(
        to_rust(r"\d[\d_]\D[\D]").unwrap(),
        "[0-9][0-9_][^0-9][[^0-9]]"
    );
    assert_eq!(to_rust(r"\bx\B").unwrap(), r"(?-u:\b)x(?-u:\B)");
    assert_eq!(to_rust(r"\/\<").unwrap(), r"\/<");
    assert_eq!(to_rust(r"\p{^Greek}\P{^L}").unwrap(), r"\P{Greek}\p{L}");
}

/// The patterns the property tests draw: a few letters, classes, anchors, repetitions and
/// alternations, in Go syntax that means the same to the regex crate.
mod properties {
    use proptest::prelude::*;

    use super::*;

    fn pattern() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("é".to_string()),
            Just(".".to_string()),
            Just("[ab]".to_string()),
            Just("[^a]".to_string()),
            Just("[a-bé]".to_string()),
            Just("^".to_string()),
            Just("$".to_string()),
            Just("(?m:^)".to_string()),
            Just("(?m:$)".to_string()),
            Just(r"\b".to_string()),
        ];
        leaf.prop_recursive(4, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..=3).prop_map(|v| v.concat()),
                (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("(?:{x}|{y})")),
                (inner, prop::sample::select(vec!["?", "*", "+", "{1,2}"]))
                    .prop_map(|(x, op)| format!("(?:{x}){op}")),
            ]
        })
    }

    /// Every string of up to `max` characters over the letters the patterns use, and a
    /// newline.
    fn strings(max: usize) -> Vec<String> {
        let letters = ['a', 'b', 'é', '\n'];
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..max {
            last = last
                .iter()
                .flat_map(|s| letters.iter().map(move |c| format!("{s}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    static STRINGS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| strings(6));

    /// A shortest string of up to 6 characters `a` accepts and `b` rejects.
    fn brute_difference(
        a: &regex::bytes::Regex,
        b: &regex::bytes::Regex,
    ) -> Option<&'static String> {
        STRINGS
            .iter()
            .find(|s| a.is_match(s.as_bytes()) && !b.is_match(s.as_bytes()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn inclusion_agrees_with_every_short_string(old in pattern(), new in pattern()) {
            let (a, b) = (go_regex(&old), go_regex(&new));
            let lost = brute_difference(&a, &b);
            let gained = brute_difference(&b, &a);
            let got = checked(&old, &new);
            // A string found by enumeration is never missed, and none is shorter than it.
            let no_longer = |found: &str, short: Option<&String>| {
                if let Some(s) = short {
                    prop_assert!(found.len() <= s.len(),
                        "{found:?} is longer than {s:?}");
                }
                Ok(())
            };
            match &got {
                Equal => prop_assert!(lost.is_none() && gained.is_none(),
                    "equal, but {lost:?} / {gained:?}"),
                Widened { example } => {
                    prop_assert!(lost.is_none(), "widened, but {old:?} alone accepts {lost:?}");
                    no_longer(example, gained)?;
                }
                Narrowed { witness } => {
                    prop_assert!(gained.is_none(),
                        "narrowed, but {new:?} alone accepts {gained:?}");
                    no_longer(witness, lost)?;
                }
                Changed { witness, example } => {
                    no_longer(witness, lost)?;
                    prop_assert!(example.is_some(), "no example for {old:?} / {new:?}");
                    no_longer(example.as_deref().unwrap_or_default(), gained)?;
                }
                Undecided { reason } => prop_assert!(false, "undecided: {reason}"),
            }
            // The converse: what enumeration finds, compare reports.
            if lost.is_some() {
                prop_assert!(matches!(got, Narrowed { .. } | Changed { .. }), "{got:?}");
            }
            if gained.is_some() {
                prop_assert!(matches!(got, Widened { .. } | Changed { .. }), "{got:?}");
            }
        }
    }
}

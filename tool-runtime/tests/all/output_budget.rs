//! The turn budget: max-min fairness, head and tail around a marker.

use proptest::prelude::*;
use tool_runtime::output::{TurnOutput, apply_turn_budget, fair_shares};

fn outputs(texts: &[String]) -> Vec<TurnOutput<'_>> {
    texts.iter().map(|t| TurnOutput { text: t, ref_id: Some("call_1") }).collect()
}

#[test]
fn small_outputs_keep_all_and_the_rest_share_what_is_left() {
    assert_eq!(fair_shares(&[10, 500, 1000], 310), vec![10, 150, 150]);
}

#[test]
fn remainder_bytes_go_to_the_earliest_calls() {
    assert_eq!(fair_shares(&[100, 100, 100], 32), vec![11, 11, 10]);
}

#[test]
fn everything_fits_when_the_sum_is_within_the_budget() {
    assert_eq!(fair_shares(&[1, 2, 3], 6), vec![1, 2, 3]);
}

#[test]
fn a_cut_result_keeps_head_and_tail_around_a_marker_naming_its_ref() {
    let text = format!("{}{}", "h".repeat(500), "t".repeat(500));
    let results = apply_turn_budget(&[TurnOutput { text: &text, ref_id: Some("call_7") }], 400);

    let r = &results[0];
    assert!(r.truncated);
    assert_eq!(
        r.marker,
        "\n[... 744 bytes omitted by the turn output budget; read them with tool_output_cache {\"ref_id\":\"call_7\"} or search with tool_output_cache_grep]\n"
    );
    assert_eq!((r.head.as_str(), r.tail.as_str()), ("h".repeat(128).as_str(), "t".repeat(128).as_str()));
    assert_eq!(r.content, format!("{}{}{}", r.head, r.marker, r.tail));
    assert_eq!(r.content.len(), 399);
    assert_eq!(r.omitted_bytes, 744);
}

#[test]
fn a_tiny_budget_still_keeps_every_marker_whole() {
    let texts = vec!["x".repeat(1000), "y".repeat(1000)];

    let results = apply_turn_budget(&outputs(&texts), 10);

    for r in &results {
        assert!(r.truncated);
        assert_eq!((r.head.as_str(), r.tail.as_str(), r.omitted_bytes), ("", "", 1000));
        assert!(r.content.starts_with("\n[... 1000 bytes omitted by the turn output budget"));
    }
}

#[test]
fn a_result_without_ref_says_to_narrow_the_call() {
    let text = "z".repeat(300);
    let results = apply_turn_budget(&[TurnOutput { text: &text, ref_id: None }], 200);

    assert!(results[0].marker.ends_with("narrow the call (a smaller limit or a more specific pattern) to see them]\n"));
}

#[test]
fn cuts_never_split_a_character() {
    let text = "é".repeat(1000);
    let results = apply_turn_budget(&[TurnOutput { text: &text, ref_id: None }], 301);

    let r = &results[0];
    assert_eq!(r.head.len() % 2, 0);
    assert_eq!(r.tail.len() % 2, 0);
    assert_eq!(r.omitted_bytes, 2000 - r.head.len() - r.tail.len());
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z\\n]{0,400}", "[é中😀a\\n]{0,300}", (0usize..3000).prop_map(|n| "w".repeat(n)),]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn budgeted_outputs_are_valid_utf8_within_budget_plus_markers(
        texts in prop::collection::vec(text_strategy(), 0..6),
        budget in 0usize..4000,
    ) {
        let results = apply_turn_budget(&outputs(&texts), budget);
        let total: usize = results.iter().map(|r| r.content.len()).sum();
        let markers: usize = results.iter().map(|r| r.marker.len()).sum();
        prop_assert!(total <= budget + markers);
        for (r, text) in results.iter().zip(&texts) {
            // `String` guarantees UTF-8; the head and tail must also be the text's own ends.
            prop_assert!(text.starts_with(&r.head));
            prop_assert!(text.ends_with(&r.tail));
            prop_assert_eq!(r.head.len() + r.tail.len() + r.omitted_bytes, text.len());
            prop_assert!(r.content.contains(&r.marker));
        }
    }

    #[test]
    fn no_result_within_its_fair_share_is_cut(
        texts in prop::collection::vec(text_strategy(), 1..6),
        budget in 0usize..4000,
    ) {
        let sizes: Vec<usize> = texts.iter().map(String::len).collect();
        let shares = fair_shares(&sizes, budget);
        let results = apply_turn_budget(&outputs(&texts), budget);
        for (i, r) in results.iter().enumerate() {
            prop_assert_eq!(r.truncated, shares[i] < sizes[i]);
            if !r.truncated {
                prop_assert_eq!(&r.content, &texts[i]);
            }
        }
    }

    #[test]
    fn shares_are_max_min_fair(
        sizes in prop::collection::vec(0usize..5000, 1..8),
        budget in 0usize..10000,
    ) {
        let shares = fair_shares(&sizes, budget);
        let total: usize = sizes.iter().sum();
        prop_assert_eq!(shares.iter().sum::<usize>(), total.min(budget));
        for (i, (&share, &size)) in shares.iter().zip(&sizes).enumerate() {
            prop_assert!(share <= size);
            if share < size {
                // A cut result gets at least as much as any other result, less one remainder byte,
                // and remainder bytes go to earlier cut results first.
                for (j, &other) in shares.iter().enumerate() {
                    prop_assert!(other <= share + 1);
                    if j > i && other < sizes[j] {
                        prop_assert!(other <= share);
                    }
                }
            }
        }
    }
}

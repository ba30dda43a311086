//! Finding a chunk's lines in a file: four levels of looseness, each searched through a hash
//! index of the file's lines so that a patch costs time linear in the file and patch sizes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

/// How loosely a chunk's lines were matched to the file's, loosest last. Each level is tried on
/// the whole rest of the file before the next one: an exact match anywhere after the cursor
/// beats a looser match before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchLevel {
    /// Byte for byte (line endings aside).
    Exact,
    /// Ignoring spaces and tabs (any Unicode white space) at the ends of lines.
    TrailingWhitespace,
    /// Ignoring white space at both ends of lines.
    Trimmed,
    /// Trimmed, and with typographic punctuation read as ASCII: the dashes U+2010..U+2015, U+2212,
    /// U+FE58, U+FE63, U+FF0D as `-`; the quotes U+2018..U+201B, U+2032, U+FF07 as `'`;
    /// U+201C..U+201F, U+2033, U+FF02 as `"`; U+2026 as `...`; and the spaces U+00A0,
    /// U+2000..U+200A, U+202F, U+205F, U+3000 as a plain space.
    Punctuation,
}

impl MatchLevel {
    /// All levels, strictest first.
    pub const ALL: [Self; 4] = [Self::Exact, Self::TrailingWhitespace, Self::Trimmed, Self::Punctuation];

    /// The form of `line` this level compares.
    pub fn key(self, line: &str) -> Cow<'_, str> {
        match self {
            Self::Exact => Cow::Borrowed(line),
            Self::TrailingWhitespace => Cow::Borrowed(line.trim_end()),
            Self::Trimmed => Cow::Borrowed(line.trim()),
            Self::Punctuation => normalise_punctuation(line.trim()),
        }
    }
}

fn ascii_for(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => "-",
        '\u{2018}'..='\u{201B}' | '\u{2032}' | '\u{FF07}' => "'",
        '\u{201C}'..='\u{201F}' | '\u{2033}' | '\u{FF02}' => "\"",
        '\u{2026}' => "...",
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        _ => return None,
    })
}

fn normalise_punctuation(line: &str) -> Cow<'_, str> {
    if !line.chars().any(|c| ascii_for(c).is_some()) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match ascii_for(c) {
            Some(ascii) => out.push_str(ascii),
            None => out.push(c),
        }
    }
    // A normalised space at either end is trimmed like any other.
    Cow::Owned(out.trim().to_owned())
}

/// The file's lines at one level, and where each distinct line is (by hash; a hash collision
/// only costs a comparison).
struct LevelIndex<'a> {
    keys: Vec<Cow<'a, str>>,
    positions: HashMap<u64, Vec<usize>>,
}

/// Searches one file's lines; indexes are built on first use of a level and then reused by every
/// chunk of the file.
pub(crate) struct Seeker<'a> {
    lines: &'a [&'a str],
    hasher: RandomState,
    levels: [Option<LevelIndex<'a>>; 4],
}

impl<'a> Seeker<'a> {
    pub(crate) fn new(lines: &'a [&'a str]) -> Self {
        Self { lines, hasher: RandomState::new(), levels: [None, None, None, None] }
    }

    fn index(&mut self, level: MatchLevel) -> &LevelIndex<'a> {
        let lines = self.lines;
        let hasher = &self.hasher;
        self.levels[level as usize].get_or_insert_with(|| {
            let keys: Vec<Cow<'a, str>> = lines.iter().map(|line| level.key(line)).collect();
            let mut positions: HashMap<u64, Vec<usize>> = HashMap::with_capacity(keys.len());
            for (index, key) in keys.iter().enumerate() {
                positions.entry(hasher.hash_one(key.as_ref())).or_default().push(index);
            }
            LevelIndex { keys, positions }
        })
    }

    /// The 0-based start of the first run of lines equal to `pattern` that starts at or after
    /// `from`, at the strictest level that has one, and that level. With `at_end`, only the run
    /// that ends at the last line counts. `None` for an empty pattern.
    ///
    /// Cost: exact matches are first found by scanning from `from` (linear over a file's chunks,
    /// which come in order); once a scan fails, and for the looser levels, an index of the
    /// file's lines at that level is built (linear, once per level) and a search looks up each
    /// pattern line, then walks the positions of the rarest one from `from` on, comparing the
    /// pattern at each until one matches.
    pub(crate) fn find(&mut self, pattern: &[&str], from: usize, at_end: bool) -> Option<(usize, MatchLevel)> {
        let (m, n) = (pattern.len(), self.lines.len());
        if m == 0 || m > n {
            return None;
        }
        for level in MatchLevel::ALL {
            if level == MatchLevel::Exact && self.levels[0].is_none() {
                // Chunks come in file order, so scanning from the cursor to the first exact match
                // costs, summed over a file's chunks, one pass over the file. The first scan that
                // finds nothing builds the index instead, for the chunks after it.
                if at_end {
                    if n - m >= from && self.lines[n - m..] == *pattern {
                        return Some((n - m, level));
                    }
                } else if let Some(start) = (from..=n - m).find(|&s| self.lines[s..s + m] == *pattern) {
                    return Some((start, level));
                }
                self.index(level);
                continue;
            }
            let hasher = self.hasher.clone();
            let index = self.index(level);
            let wanted: Vec<Cow<'_, str>> = pattern.iter().map(|line| level.key(line)).collect();
            let matches_at = |start: usize| (0..m).all(|j| index.keys[start + j] == wanted[j]);
            if at_end {
                if n - m >= from && matches_at(n - m) {
                    return Some((n - m, level));
                }
                continue;
            }
            let mut rarest: Option<(usize, &Vec<usize>)> = None;
            let mut impossible = false;
            for (offset, key) in wanted.iter().enumerate() {
                match index.positions.get(&hasher.hash_one(key.as_ref())) {
                    None => {
                        impossible = true;
                        break;
                    }
                    Some(found) if rarest.is_none_or(|(_, best)| found.len() < best.len()) => {
                        rarest = Some((offset, found));
                    }
                    Some(_) => {}
                }
            }
            let Some((offset, positions)) = rarest.filter(|_| !impossible) else { continue };
            let first = positions.partition_point(|&p| p < from + offset);
            for &p in &positions[first..] {
                let start = p - offset;
                if start + m > n {
                    break;
                }
                if matches_at(start) {
                    return Some((start, level));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_match_after_the_cursor_beats_an_earlier_trimmed_one() {
        let lines = ["  a", "b", "a", "b"];
        assert_eq!(Seeker::new(&lines).find(&["a", "b"], 0, false), Some((2, MatchLevel::Exact)));
    }

    #[test]
    fn the_earliest_match_at_the_first_level_that_has_one_wins() {
        let lines = ["x", "a ", "a  ", "a"];
        assert_eq!(Seeker::new(&lines).find(&["a "], 0, false), Some((1, MatchLevel::Exact)));
        assert_eq!(Seeker::new(&lines).find(&["a\t"], 0, false), Some((1, MatchLevel::TrailingWhitespace)));
    }

    #[test]
    fn punctuation_is_read_as_ascii_at_the_last_level() {
        let lines = ["let s = \u{201C}hi\u{201D} \u{2014} x;"];
        assert_eq!(Seeker::new(&lines).find(&["let s = \"hi\" - x;"], 0, false), Some((0, MatchLevel::Punctuation)));
    }

    #[test]
    fn at_end_only_matches_the_last_lines() {
        let lines = ["a", "b", "a"];
        assert_eq!(Seeker::new(&lines).find(&["a"], 0, true), Some((2, MatchLevel::Exact)));
        assert_eq!(Seeker::new(&lines).find(&["b"], 0, true), None);
    }

    #[test]
    fn after_a_failed_exact_scan_the_index_finds_the_same_runs() {
        let lines = ["a", "b", "a", "b"];
        let mut seeker = Seeker::new(&lines);
        assert_eq!(seeker.find(&["b", "b"], 0, false), None);
        assert!(seeker.levels[0].is_some());
        assert_eq!(seeker.find(&["a", "b"], 1, false), Some((2, MatchLevel::Exact)));
        assert_eq!(seeker.find(&["b"], 0, true), Some((3, MatchLevel::Exact)));
    }

    #[test]
    fn nothing_before_the_cursor_is_found() {
        let lines = ["a", "b"];
        assert_eq!(Seeker::new(&lines).find(&["a"], 1, false), None);
    }
}

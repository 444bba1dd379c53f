//! Sentences: splitting a passage into them ([`split`]), and aligning the
//! source's with the translation's to find a sentence omitted
//! (`omission`) or added (`addition`), or two in each other's place
//! (`sentence_order`) ([`align`]).
//!
//! The alignment's constants were measured with the fidelity benchmark
//! (`bench/fidelity.sh detect`: *News from Nowhere* and *Moby-Dick*,
//! 3,480 paragraphs machine-translated into Spanish with Apertium): with
//! one translated sentence of a multi-sentence paragraph dropped, 97 % are
//! flagged; with a sentence of another paragraph inserted, 96 %; with two
//! sentences exchanged, 93 %; of the clean paragraphs, 6 get one of the
//! three. Most of what is missed is a sentence of one word (`"Oho!"`),
//! which is never reported, a short one whose neighbours' lengths leave
//! room for it, or two sentences exchanged that neither lengths nor
//! shared words tell apart.

use std::collections::{HashMap, HashSet};

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::{length, text};

mod splitting;

use splitting::continues;

pub(super) use splitting::{split, split_at};

/// The sentences of one side without a counterpart on the other, each
/// clipped for a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Alignment {
    /// Source sentences the translation lacks.
    pub omitted: Vec<String>,
    /// Translation sentences the source lacks.
    pub added: Vec<String>,
    /// Translation sentences that match source sentences elsewhere than
    /// where they stand: two of them in each other's place, each pair
    /// given as `first / second` in the translation's order.
    pub moved: Vec<String>,
}

/// Prior probabilities of the beads an alignment is made of: how many
/// source sentences (first) match how many translation sentences
/// (second). Gale and Church's figures, with room for three sentences
/// merged into one, but a merge or split at a full stop made as rare as a
/// sentence lost (translators seldom move a full stop; where they do, the
/// lengths show it), so that a sentence count one short or long is an
/// omission or addition unless the lengths say otherwise. A sentence on
/// its own (`1-0`, `0-1`) is one omitted or added; joins after a question
/// or exclamation mark are priced apart ([`bead_prior`]).
const BEADS: [(usize, usize, f64); 8] = [
    (1, 1, 0.89),
    (2, 1, 0.005),
    (1, 2, 0.005),
    (2, 2, 0.011),
    (3, 1, 0.005),
    (1, 3, 0.005),
    (1, 0, 0.02),
    (0, 1, 0.02),
];

/// Variance of the log length ratio of one bead, times its length in
/// characters: the part of a sentence's length that varies with how it
/// is put. Twice what machine translation into Spanish and Catalan shows
/// (about 1), so that freer translations are not taken for lost
/// sentences.
const LENGTH_VARIANCE: f64 = 2.0;

/// Standard deviation of a translation's own length ratio around the
/// pair's expected one ([`length::expected_ratio`]), before it is fitted
/// to the passage, and after.
const RATIO_SPREAD: f64 = 0.1;
const FITTED_SPREAD: f64 = 0.03;

/// Chance that a word shared by the two sides (see [`anchors`]) turns up
/// in a sentence that does not translate the one it is from.
const CHANCE_MATCH: f64 = 0.01;
/// The most a shared word is expected to be kept in translation.
const MAX_KEPT: f64 = 0.9;

/// Cost of each question or exclamation mark one side of a bead has more
/// than the other.
const MARK_COST: f64 = 2.0;

/// How likely a sentence must be to stand alone, over the alignments the
/// model allows, to be reported omitted or added: more likely than not,
/// so that a sentence as likely merged into a neighbour as lost is not.
/// (Asking for 0.6 loses a tenth of the faults found at 0.5 on
/// machine-translated Spanish, and finds no fewer in its clean passages.)
const REPORT_PROBABILITY: f64 = 0.5;

/// The factor a merge's (`2-1`) or split's (`1-2`) prior takes when the
/// one sentence has a joint where the other side's boundary falls
/// ([`joint_at`]): a comma, semicolon, colon, dash or conjunction that
/// cuts it in the proportions of the two sentences is how translators
/// merge (`He came in. He sat down.` → `Il entra et s'assit.`), and a
/// lost sentence leaves one there only by chance.
const JOINED: f64 = 10.0;

/// How far, as a share of the one sentence's length, its joint may be
/// from where the two sentences' proportions put it.
const JOINT_SPREAD: f64 = 0.1;

/// The factor a bead's prior takes for each join after a soft end
/// ([`bead_prior`]): as both sides are cut at every soft end, a join is
/// only needed where one side has a question or exclamation the other
/// does not mark, which is rarer than a clean merge, but a short
/// sentence dropped beside a question (`"Is it?" said I.` for `"¿Es?"`)
/// must still cost more than it alone. (At 0.2 the benchmark flags 1.8
/// points fewer omissions, for one clean passage fewer reported.)
const SOFT_JOIN: f64 = 0.05;

/// The most sentences one side of a bead may take, soft joins included:
/// at [`SOFT_JOIN`] a longer chain of joins never wins.
const MAX_BEAD: usize = 4;

/// How far from the diagonal of the lattice, in sentences, an alignment
/// may stray: far enough for any run of sentences omitted or added that
/// alignment can still tell, and it keeps the work linear in the
/// sentences.
const BAND: f64 = 12.0;

/// Alignments are not tried past this many sentence pairs (a passage of
/// 200 sentences on each side): the lattice still lays out a cell for
/// every pair, though only those within [`BAND`] are costed.
const MAX_CELLS: usize = 40_000;

/// The fewest words a sentence needs for its loss or addition to count:
/// `Yes.` or `No!` folded into a neighbour is a matter of style, but
/// `Yes, fortunately.` lost is a loss.
const MIN_WORDS: usize = 2;
/// The same for scripts written without spaces, in letters.
const MIN_UNSPACED_LETTERS: usize = 5;

/// A sentence as the alignment sees it.
struct Sentence<'a> {
    text: &'a str,
    /// Characters, whitespace runs counted once.
    length: f64,
    /// Words likely to be kept or recognisable in translation
    /// ([`anchors`]), by their number in the passage, sorted.
    anchors: Vec<u32>,
    /// Question marks.
    questions: usize,
    /// Exclamation marks.
    exclamations: usize,
    /// Whether it ends in a question or exclamation mark or an ellipsis
    /// (closing quotes aside): a boundary that languages and translators
    /// place differently (`"Is it?" said he` against `"¿Es?" Dijo él`).
    soft_end: bool,
}

impl<'a> Sentence<'a> {
    /// The sentence `text`, its anchors numbered through `ids`, which
    /// both sides of a passage share.
    fn new(text: &'a str, ids: &mut HashMap<String, u32>) -> Self {
        let mut numbers: Vec<u32> = anchors(text)
            .into_iter()
            .map(|a| {
                let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
                *ids.entry(a).or_insert(next)
            })
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        let words: Vec<&str> = text.split_whitespace().collect();
        let chars: usize = words.iter().map(|w| w.chars().count()).sum();
        Sentence {
            text,
            length: length::count_f64(chars + words.len().saturating_sub(1)),
            anchors: numbers,
            questions: text.matches(['?', '？', '؟']).count(),
            exclamations: text.matches(['!', '！']).count(),
            soft_end: soft_end(text),
        }
    }
}

/// Whether `text` ends in `?`, `!` or an ellipsis, past closing quotes
/// and brackets.
fn soft_end(text: &str) -> bool {
    let body = text.trim_end_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '”' | '’' | '»' | '›' | ')' | ']' | '*' | '_'
            )
    });
    body.ends_with(['?', '!', '？', '！', '؟', '…']) || body.ends_with("...")
}

/// `word` lower-cased without its diacritics.
fn fold(word: &str) -> String {
    word.nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The words of `text` a translation is likely to keep or echo: numbers,
/// and the first four letters of words of five or more (names, and
/// cognates such as *moment* and *momento*), without repeats.
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter_map(|w| {
            if !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()) {
                Some(w.to_owned())
            } else if w.chars().count() >= 5 {
                Some(fold(w).chars().take(4).collect())
            } else {
                None
            }
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether a sentence is long enough for its loss or addition to count.
fn substantial(text: &str) -> bool {
    text::words_with_letters(text) >= MIN_WORDS
        || text
            .chars()
            .filter(|c| c.is_alphabetic() && text::unspaced(*c))
            .count()
            >= MIN_UNSPACED_LETTERS
}

/// `-ln P(|Z| >= z)` for a standard normal `Z`: the cost of a length
/// `z` standard deviations off. Numerical Recipes' `erfcc` (fractional
/// error under 1.2e-7), taken in logarithms so that far-off lengths do
/// not underflow.
fn tail_cost(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x);
    let poly = -1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    -(t.ln() - x * x + poly)
}

/// What a bead's cost depends on besides its sentences.
struct Model {
    /// Expected ratio of translation to source characters.
    ratio: f64,
    /// Spread of the translation's own ratio around it.
    spread: f64,
    /// How often a source anchor is found in its translation, and the
    /// other way round, as the passage shows.
    kept_source: f64,
    kept_target: f64,
}

impl Model {
    /// The cost of a bead matching `source` with `target`, both non-empty.
    fn cost(&self, source: &[Sentence<'_>], target: &[Sentence<'_>]) -> f64 {
        let a: f64 = source.iter().map(|s| s.length).sum();
        let b: f64 = target.iter().map(|s| s.length).sum();
        let (a, b) = (a.max(1.0), b.max(1.0));
        let mean = (a + b / self.ratio) / 2.0;
        let spread = (self.spread * self.spread + LENGTH_VARIANCE / (self.ratio * mean)).sqrt();
        let z = (b / (self.ratio * a)).ln() / spread;
        tail_cost(z) + self.anchor_cost(source, target) + mark_cost(source, target)
    }

    /// Half the log-likelihood ratio of the anchors of both sides being
    /// found (or not) on the other, between a true match and chance.
    fn anchor_cost(&self, source: &[Sentence<'_>], target: &[Sentence<'_>]) -> f64 {
        let side = |from: &[Sentence<'_>], to: &[Sentence<'_>], kept: f64| -> f64 {
            let found = (kept / CHANCE_MATCH).ln();
            let missed = ((1.0 - kept) / (1.0 - CHANCE_MATCH)).ln();
            from.iter()
                .flat_map(|s| &s.anchors)
                .map(|a| {
                    if to.iter().any(|t| t.anchors.binary_search(a).is_ok()) {
                        -found
                    } else {
                        -missed
                    }
                })
                .sum()
        };
        (side(source, target, self.kept_source) + side(target, source, self.kept_target)) / 2.0
    }
}

/// [`MARK_COST`] for each question or exclamation mark one side has more.
fn mark_cost(source: &[Sentence<'_>], target: &[Sentence<'_>]) -> f64 {
    let count = |side: &[Sentence<'_>], f: fn(&Sentence<'_>) -> usize| -> usize {
        side.iter().map(f).sum()
    };
    let questions = count(source, |s| s.questions).abs_diff(count(target, |s| s.questions));
    let exclamations =
        count(source, |s| s.exclamations).abs_diff(count(target, |s| s.exclamations));
    MARK_COST * length::count_f64(questions + exclamations)
}

/// How often the anchors of `from` are found anywhere in `to`.
fn kept(from: &[Sentence<'_>], to: &[Sentence<'_>]) -> f64 {
    let total: usize = from.iter().map(|s| s.anchors.len()).sum();
    if total == 0 {
        return CHANCE_MATCH;
    }
    let all: HashSet<u32> = to.iter().flat_map(|s| s.anchors.iter().copied()).collect();
    let found = from
        .iter()
        .flat_map(|s| &s.anchors)
        .filter(|a| all.contains(a))
        .count();
    (length::count_f64(found) / length::count_f64(total)).clamp(CHANCE_MATCH, MAX_KEPT)
}

/// A bead of an alignment: source sentences `s0..s1` matched with
/// translation sentences `t0..t1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bead {
    s0: usize,
    s1: usize,
    t0: usize,
    t1: usize,
}

/// A bead of the lattice, by the cell it ends at: how many source and
/// translation sentences it takes, and its cost.
#[derive(Debug, Clone, Copy)]
struct Step {
    di: usize,
    dj: usize,
    cost: f64,
}

/// The beads of the alignment lattice that fit, by the cell they end at
/// (`i` source and `j` translation sentences in, row by row): a sentence
/// alone, or sentences of both sides whose shape, soft joins aside, is
/// one of [`BEADS`] ([`bead_prior`]), at most [`MAX_BEAD`] a side.
fn lattice(source: &[Sentence<'_>], target: &[Sentence<'_>], model: &Model) -> Vec<Vec<Step>> {
    let (n, m) = (source.len(), target.len());
    let mut out = vec![Vec::new(); (n + 1) * (m + 1)];
    for i in 0..=n {
        for j in 0..=m {
            if !in_band(i, j, n, m) {
                continue;
            }
            let cell = &mut out[i * (m + 1) + j];
            for di in 0..=i.min(MAX_BEAD) {
                for dj in 0..=j.min(MAX_BEAD) {
                    let lone = di == 0 || dj == 0;
                    if lone && di + dj != 1 {
                        continue;
                    }
                    let (s, t) = (&source[i - di..i], &target[j - dj..j]);
                    let prior = bead_prior(s, t) * joint_factor(s, t);
                    if prior <= 0.0 {
                        continue;
                    }
                    let mut cost = -prior.ln();
                    if !lone {
                        cost += model.cost(s, t);
                    }
                    cell.push(Step { di, dj, cost });
                }
            }
        }
    }
    out
}

/// Whether the cell `i`, `j` of the lattice of `n` source and `m`
/// translation sentences is within [`BAND`] sentences of its diagonal,
/// where an alignment may pass.
fn in_band(i: usize, j: usize, n: usize, m: usize) -> bool {
    let (i, j, n, m) = (
        length::count_f64(i),
        length::count_f64(j),
        length::count_f64(n).max(1.0),
        length::count_f64(m).max(1.0),
    );
    (i * m / n - j).abs().min((j * n / m - i).abs()) <= BAND
}

/// The prior probability of a bead matching `source` with `target`
/// ([`BEADS`]): a join after a soft end ([`Sentence::soft_end`]) inside
/// one side is a boundary the other side may well not have, so it counts
/// as [`SOFT_JOIN`] of a bead without that join rather than as a merge.
fn bead_prior(source: &[Sentence<'_>], target: &[Sentence<'_>]) -> f64 {
    let soft = |side: &[Sentence<'_>]| {
        side.split_last().map_or(0, |(_, joined)| {
            joined.iter().filter(|s| s.soft_end).count()
        })
    };
    let (ss, ts) = (soft(source), soft(target));
    let shape = (source.len() - ss, target.len() - ts);
    let prior = BEADS
        .iter()
        .find(|&&(di, dj, _)| (di, dj) == shape)
        .map_or(0.0, |&(_, _, p)| p);
    prior * SOFT_JOIN.powi(i32::try_from(ss + ts).unwrap_or(i32::MAX))
}

/// [`JOINED`] for a merge or a split whose one sentence is cut at a joint
/// where the two sentences' proportions put their boundary; 1 otherwise.
fn joint_factor(source: &[Sentence<'_>], target: &[Sentence<'_>]) -> f64 {
    let (one, two) = match (source, target) {
        ([a, b], [one]) | ([one], [a, b]) => (one, (a, b)),
        _ => return 1.0,
    };
    let share = two.0.length / (two.0.length + two.1.length).max(1.0);
    if joint_at(one.text, share) {
        JOINED
    } else {
        1.0
    }
}

/// Words that join two clauses into one sentence, in the languages whose
/// sentences the checks align most.
const CONJUNCTIONS: &[&str] = &[
    "and", "but", "so", "et", "mais", "donc", "y", "e", "pero", "mas", "und", "aber", "doch", "ma",
    "maar", "och", "og", "ale",
];

/// Whether `sentence` has a joint (see [`JOINED`]) within
/// [`JOINT_SPREAD`] of `share` of its length.
fn joint_at(sentence: &str, share: f64) -> bool {
    let total = length::count_f64(sentence.chars().count()).max(1.0);
    let near = |at: usize| (length::count_f64(at) / total - share).abs() <= JOINT_SPREAD;
    let mut word_start: Option<usize> = None;
    for (n, (i, c)) in sentence.char_indices().enumerate() {
        if c.is_alphabetic() {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = word_start.take() {
            let word = sentence[start..i].to_lowercase();
            let chars = sentence[..start].chars().count();
            if CONJUNCTIONS.contains(&word.as_str()) && chars > 0 && near(chars) {
                return true;
            }
        }
        if matches!(c, ',' | ';' | ':' | '—' | '–' | '，' | '；' | '：') && near(n) {
            return true;
        }
    }
    false
}

/// The cheapest alignment through `costs` ([`lattice`]) of `n` source
/// and `m` translation sentences.
fn cheapest(costs: &[Vec<Step>], n: usize, m: usize) -> Vec<Bead> {
    let width = m + 1;
    let mut total = vec![f64::INFINITY; (n + 1) * width];
    let mut step = vec![(0usize, 0usize); (n + 1) * width];
    total[0] = 0.0;
    for i in 0..=n {
        for j in 0..=m {
            for st in &costs[i * width + j] {
                let here = total[(i - st.di) * width + (j - st.dj)] + st.cost;
                if here < total[i * width + j] {
                    total[i * width + j] = here;
                    step[i * width + j] = (st.di, st.dj);
                }
            }
        }
    }
    let mut beads = Vec::new();
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        let (di, dj) = step[i * width + j];
        if (di, dj) == (0, 0) {
            break;
        }
        beads.push(Bead {
            s0: i - di,
            s1: i,
            t0: j - dj,
            t1: j,
        });
        i -= di;
        j -= dj;
    }
    beads.reverse();
    beads
}

/// `ln(e^a + e^b)`, without overflow.
fn log_add(a: f64, b: f64) -> f64 {
    let high = a.max(b);
    if high == f64::NEG_INFINITY {
        return high;
    }
    high + ((a - high).exp() + (b - high).exp()).ln()
}

/// How likely each source sentence is to be alone (omitted) and each
/// translation sentence (added), over all alignments through `costs`
/// weighed by `e^-cost`: the forward-backward sums of the lattice.
fn lone_probabilities(costs: &[Vec<Step>], n: usize, m: usize) -> (Vec<f64>, Vec<f64>) {
    let width = m + 1;
    let mut forward = vec![f64::NEG_INFINITY; (n + 1) * width];
    forward[0] = 0.0;
    for i in 0..=n {
        for j in 0..=m {
            for st in &costs[i * width + j] {
                let via = forward[(i - st.di) * width + (j - st.dj)] - st.cost;
                forward[i * width + j] = log_add(forward[i * width + j], via);
            }
        }
    }
    let mut backward = vec![f64::NEG_INFINITY; (n + 1) * width];
    backward[n * width + m] = 0.0;
    for i in (0..=n).rev() {
        for j in (0..=m).rev() {
            let here = backward[i * width + j];
            if here == f64::NEG_INFINITY {
                continue;
            }
            for st in &costs[i * width + j] {
                let from = (i - st.di) * width + (j - st.dj);
                backward[from] = log_add(backward[from], here - st.cost);
            }
        }
    }
    let whole = forward[n * width + m];
    let (mut omitted, mut added) = (vec![0.0; n], vec![0.0; m]);
    for i in 0..=n {
        for j in 0..=m {
            for st in costs[i * width + j]
                .iter()
                .filter(|st| st.di == 0 || st.dj == 0)
            {
                let p = (forward[(i - st.di) * width + (j - st.dj)] - st.cost
                    + backward[i * width + j]
                    - whole)
                    .exp();
                if st.di > 0 {
                    omitted[i - 1] += p;
                } else {
                    added[j - 1] += p;
                }
            }
        }
    }
    (omitted, added)
}

/// The passage's own length ratio: the pair's expected `ratio`, moved
/// toward what the one-to-one beads show as far as their lengths make
/// them trustworthy.
fn fitted_ratio(
    source: &[Sentence<'_>],
    target: &[Sentence<'_>],
    beads: &[Bead],
    ratio: f64,
    spread: f64,
) -> f64 {
    let prior = 1.0 / (spread * spread);
    let (mut sum, mut weight) = (prior * ratio.ln(), prior);
    for b in beads
        .iter()
        .filter(|b| b.s1 == b.s0 + 1 && b.t1 == b.t0 + 1)
    {
        let (a, t) = (source[b.s0].length.max(1.0), target[b.t0].length.max(1.0));
        let w = ratio * a / LENGTH_VARIANCE;
        sum += w * (t / a).ln();
        weight += w;
    }
    (sum / weight).exp()
}

/// Aligns the sentences of the source and its translation (plain texts,
/// placeholders stripped) and returns those of either side without a
/// counterpart.
///
/// A dynamic-programming alignment in the manner of Gale and Church: each
/// bead (one sentence to one, two to one or one to two, two to two, three
/// to one or one to three, or a sentence alone) costs the log of its
/// prior probability, plus, when it matches sentences, how unlikely the
/// ratio of their lengths is given the expected ratio (a log-normal whose
/// spread narrows as the sentences grow), how unlikely their shared words
/// are (numbers, names and cognates found on the other side, or missing,
/// weighed by how often this passage keeps them) and any question or
/// exclamation mark one side has more than the other. The expected ratio
/// is the pair's ([`length::expected_ratio`]), then fitted to the
/// one-to-one beads of the cheapest alignment, so that a translator who
/// writes shorter or longer than the table is measured against
/// themselves. Over all alignments, weighed by their costs, a sentence
/// alone with probability [`REPORT_PROBABILITY`] or more is reported.
///
/// The pieces aligned are sentences also cut after a question or
/// exclamation mark that a lower-case word follows ([`split_at`]), and a
/// bead may join such soft boundaries at a cost of its own
/// ([`bead_prior`]), so that `"Is it?" said he` and `"¿Es?" Dijo él` match whichever side
/// puts a capital there, while a question left out of a sentence that
/// goes on is still a piece alone. Two sentences merged into one, or one
/// split in two, at a full stop are a `2-1` or `1-2` bead, as rare a priori
/// as a lost sentence unless the one sentence has a joint where the
/// other side's boundary falls ([`JOINED`]). Beads whose translation sentences match each
/// other's source sentences much better crossed ([`crossings`]) are
/// reported moved instead of omitted and added. A sentence of one word
/// (`Yes.`) is never reported; nor is any when either side has more than
/// [`MAX_CELLS`] sentence pairs. Only cells within [`BAND`] sentences of
/// the diagonal are costed, so the work grows with the sentences, not
/// their product.
pub(super) fn align(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> Alignment {
    let mut ids = HashMap::new();
    let mut pieces = |text| {
        split_at(text, true)
            .into_iter()
            .map(|s| Sentence::new(s, &mut ids))
            .collect()
    };
    let source: Vec<Sentence<'_>> = pieces(source);
    let target: Vec<Sentence<'_>> = pieces(translation);
    if source.is_empty()
        || target.is_empty()
        || source.len().saturating_mul(target.len()) > MAX_CELLS
    {
        return Alignment::default();
    }
    let expected = length::expected_ratio(source_language, target_language);
    // A translation outside the length band as a whole (half to twice
    // the expected length, `length_ratio`'s) may be as long or short
    // sentence by sentence: its own ratio is then not assumed near the
    // table's, lest sentences lost and made up explain it away.
    let total = |side: &[Sentence<'_>]| side.iter().map(|s| s.length).sum::<f64>().max(1.0);
    let off = (total(&target) / (expected * total(&source))).ln().abs();
    let mut model = Model {
        ratio: expected,
        spread: if off > std::f64::consts::LN_2 {
            off
        } else {
            RATIO_SPREAD
        },
        kept_source: kept(&source, &target),
        kept_target: kept(&target, &source),
    };
    let (n, m) = (source.len(), target.len());
    let first = cheapest(&lattice(&source, &target, &model), n, m);
    model.ratio = fitted_ratio(&source, &target, &first, expected, model.spread);
    model.spread = FITTED_SPREAD;
    let costs = lattice(&source, &target, &model);
    let (omitted, added) = lone_probabilities(&costs, n, m);
    let mut crossed = crossings(&source, &target, &cheapest(&costs, n, m), &model);
    if crossed.is_empty() && n == m {
        // As many sentences on both sides: the alignment may have taken
        // two sentences in each other's place for a merge and a split,
        // so they are also tried one for one.
        let straight: Vec<Bead> = (0..n)
            .map(|k| Bead {
                s0: k,
                s1: k + 1,
                t0: k,
                t1: k + 1,
            })
            .collect();
        crossed = crossings(&source, &target, &straight, &model);
    }
    let (mut moved_source, mut moved_target) = (vec![false; n], vec![false; m]);
    let mut moved = Vec::new();
    for (p, q) in crossed {
        moved_source[p.s0..p.s1].fill(true);
        moved_source[q.s0..q.s1].fill(true);
        moved_target[p.t0..p.t1].fill(true);
        moved_target[q.t0..q.t1].fill(true);
        let texts: Vec<String> = [p, q]
            .iter()
            .filter(|b| b.t1 > b.t0)
            .map(|b| joined(&target[b.t0..b.t1]))
            .collect();
        moved.push(text::clip(&texts.join(" / ")));
    }
    let sure = |side: &[Sentence<'_>], odds: &[f64], moved: &[bool]| -> Vec<String> {
        side.iter()
            .zip(odds)
            .zip(moved)
            .filter(|((s, p), moved)| **p >= REPORT_PROBABILITY && !**moved && substantial(s.text))
            .map(|((s, _), _)| text::clip(s.text))
            .collect()
    };
    Alignment {
        omitted: sure(&source, &omitted, &moved_source),
        added: sure(&target, &added, &moved_target),
        moved,
    }
}

/// The texts of `side` joined by spaces.
fn joined(side: &[Sentence<'_>]) -> String {
    side.iter().map(|s| s.text).collect::<Vec<_>>().join(" ")
}

/// How much cheaper, in the units of a bead's cost, two beads' sentences
/// must match crossed than as aligned for them to be reported in each
/// other's place: the crossed match must be many times likelier, as
/// lengths and shared words of unrelated sentences of one passage are
/// often close by chance.
const CROSS_MARGIN: f64 = 4.0;

/// The most a source sentence left alone and a translation sentence left
/// alone may cost matched ([`Model::cost`]) to be taken for one sentence
/// moved: what a fair one-to-one match costs.
const MOVED_COST: f64 = 2.5;

/// How many beads apart two beads are tried crossed: the work stays
/// linear in the sentences.
const CROSS_WINDOW: usize = 16;

/// Pairs of beads of the alignment `beads` whose translation sentences
/// match each other's source sentences (crossed) much better than their
/// own: two sentences in each other's place, which a monotone alignment
/// sees as a merge, an omission and an addition, or a poor match. A
/// source sentence left alone and a translation sentence left alone
/// that match each other count too, as does a two-to-two bead whose
/// sentences match crossed. Each bead is in one pair at most.
fn crossings(
    source: &[Sentence<'_>],
    target: &[Sentence<'_>],
    beads: &[Bead],
    model: &Model,
) -> Vec<(Bead, Bead)> {
    let cost = |b: &Bead| model.cost(&source[b.s0..b.s1], &target[b.t0..b.t1]);
    let matched = |b: &Bead| b.s1 > b.s0 && b.t1 > b.t0;
    let mut taken = vec![false; beads.len()];
    let mut out = Vec::new();
    for (k, b) in beads.iter().enumerate() {
        // Two sentences crossed inside one bead.
        if b.s1 == b.s0 + 2 && b.t1 == b.t0 + 2 {
            let one = |s: usize, t: usize| model.cost(&source[s..=s], &target[t..=t]);
            let straight = one(b.s0, b.t0) + one(b.s0 + 1, b.t0 + 1);
            let crossed = one(b.s0, b.t0 + 1) + one(b.s0 + 1, b.t0);
            if straight - crossed > CROSS_MARGIN {
                taken[k] = true;
                let first = Bead {
                    s0: b.s0 + 1,
                    s1: b.s1,
                    t0: b.t0,
                    t1: b.t0 + 1,
                };
                let second = Bead {
                    s0: b.s0,
                    s1: b.s0 + 1,
                    t0: b.t0 + 1,
                    t1: b.t1,
                };
                out.push((first, second));
            }
        }
    }
    for p in 0..beads.len() {
        if taken[p] {
            continue;
        }
        let bp = beads[p];
        for q in p + 1..beads.len().min(p + 1 + CROSS_WINDOW) {
            let bq = beads[q];
            if taken[q] || taken[p] {
                continue;
            }
            let found = if matched(&bp) && matched(&bq) {
                // Neighbours that are pieces of one sentence (the second
                // goes on in lower case) are a boundary moved, not an
                // order changed.
                let goes_on = |side: &[Sentence<'_>], at: usize| {
                    side.get(at).is_some_and(|s| continues(s.text))
                };
                if q == p + 1 && (goes_on(source, bq.s0) || goes_on(target, bq.t0)) {
                    continue;
                }
                let straight = cost(&bp) + cost(&bq);
                let crossed = model.cost(&source[bp.s0..bp.s1], &target[bq.t0..bq.t1])
                    + model.cost(&source[bq.s0..bq.s1], &target[bp.t0..bp.t1]);
                straight - crossed > CROSS_MARGIN
            } else {
                // One sentence alone on each side, matching each other.
                let (s, t) = match (bp.s1 > bp.s0, bq.s1 > bq.s0) {
                    (true, false) if !matched(&bp) && bq.t1 > bq.t0 => (bp, bq),
                    (false, true) if !matched(&bq) && bp.t1 > bp.t0 => (bq, bp),
                    _ => continue,
                };
                // Alone side by side, with no match between them, they are
                // a poor match in place, not a sentence moved.
                if beads[p + 1..q].iter().all(|b| !matched(b)) {
                    continue;
                }
                model.cost(&source[s.s0..s.s1], &target[t.t0..t.t1]) <= MOVED_COST
            };
            if found {
                taken[p] = true;
                taken[q] = true;
                out.push((bp, bq));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;

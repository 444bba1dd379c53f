//! The `quality` section of the completion report (spec 2.7): what the
//! scores of the request's passages say, which chapters read worst and
//! which passages a person should look at first.

use super::count;
use dragoman_model::documents::report::{QualityBands, QualityReport, ReviewFirst, WeakChapter};
use dragoman_model::entities::{chapter, passage};
use dragoman_model::quality::signals_of;
use dragoman_model::vocab::Band;
use std::collections::HashMap;

/// Chapters listed in `weakest_chapters` at most.
pub const MAX_WEAKEST_CHAPTERS: usize = 10;
/// Passages listed in `review_first` at most.
pub const MAX_REVIEW_FIRST: usize = 10;
/// Buckets of the histogram, ten points wide.
const BUCKETS: usize = 10;
/// The best score; a passage that has it has nothing to review.
const PERFECT: i32 = 100;

/// A scored passage that falls below the request's threshold and that no
/// person validated since.
pub fn to_review(p: &passage::Model, review_below: i32) -> bool {
    p.score.is_some_and(|s| s < review_below) && !p.validated
}

/// The histogram bucket of a score: tens, with 100 in the last.
fn bucket(score: i32) -> usize {
    usize::try_from(score.clamp(0, PERFECT) / 10)
        .unwrap_or(0)
        .min(BUCKETS - 1)
}

/// The mean of `scores`, rounded to one decimal; `None` for no score.
fn average(scores: &[i32]) -> Option<f64> {
    exact_average(scores).map(|a| (a * 10.0).round() / 10.0)
}

fn exact_average(scores: &[i32]) -> Option<f64> {
    if scores.is_empty() {
        return None;
    }
    let sum: f64 = scores.iter().map(|s| f64::from(*s)).sum();
    // Exact: a request holds far fewer than 2^52 passages.
    Some(sum / scores.len() as f64)
}

/// Where a passage stands in reading order.
fn reading_position(p: &passage::Model, chapters: &HashMap<String, chapter::Model>) -> (i32, i32) {
    (
        chapters.get(&p.chapter_id).map(|c| c.position).unwrap_or(0),
        p.position,
    )
}

/// The scores of one chapter's passages and how many of them to review.
struct ChapterScores<'a> {
    chapter: &'a chapter::Model,
    scores: Vec<i32>,
    to_review: usize,
}

fn weakest_chapters(
    passages: &[passage::Model],
    chapters: &HashMap<String, chapter::Model>,
    review_below: i32,
) -> Vec<WeakChapter> {
    let mut per_chapter: HashMap<&str, ChapterScores<'_>> = HashMap::new();
    for p in passages {
        let (Some(score), Some(chapter)) = (p.score, chapters.get(&p.chapter_id)) else {
            continue;
        };
        let entry = per_chapter
            .entry(chapter.id.as_str())
            .or_insert_with(|| ChapterScores {
                chapter,
                scores: Vec::new(),
                to_review: 0,
            });
        entry.scores.push(score);
        if to_review(p, review_below) {
            entry.to_review += 1;
        }
    }
    let mut ranked: Vec<(f64, ChapterScores<'_>)> = per_chapter
        .into_values()
        .filter_map(|c| exact_average(&c.scores).map(|a| (a, c)))
        .collect();
    // Lowest average first; equal averages in reading order.
    ranked.sort_by(|(a, x), (b, y)| {
        a.total_cmp(b)
            .then(x.chapter.position.cmp(&y.chapter.position))
    });
    ranked
        .into_iter()
        .take(MAX_WEAKEST_CHAPTERS)
        .map(|(_, c)| WeakChapter {
            average: average(&c.scores),
            chapter_id: c.chapter.id.clone(),
            external_id: c.chapter.external_id.clone(),
            minimum: c.scores.iter().min().copied().map(i64::from),
            position: i64::from(c.chapter.position),
            scored: count(c.scores.len()),
            title: c.chapter.title.clone(),
            to_review: count(c.to_review),
        })
        .collect()
}

fn review_first(
    passages: &[passage::Model],
    chapters: &HashMap<String, chapter::Model>,
) -> Vec<ReviewFirst> {
    let mut candidates: Vec<(i32, &passage::Model)> = passages
        .iter()
        .filter(|p| !p.validated)
        .filter_map(|p| p.score.filter(|s| *s < PERFECT).map(|s| (s, p)))
        .collect();
    candidates.sort_by_key(|(score, p)| (*score, reading_position(p, chapters)));
    candidates
        .into_iter()
        .take(MAX_REVIEW_FIRST)
        .map(|(score, p)| ReviewFirst {
            chapter_external_id: chapters
                .get(&p.chapter_id)
                .and_then(|c| c.external_id.clone()),
            chapter_id: p.chapter_id.clone(),
            position: i64::from(p.position),
            score: i64::from(score),
            segment_id: p.id.clone(),
            signals: signals_of(p),
            status: p.status,
        })
        .collect()
}

/// The section over the request's passages (`chapters` by id).
pub fn section(
    passages: &[passage::Model],
    chapters: &HashMap<String, chapter::Model>,
    review_below: i32,
) -> QualityReport {
    let scores: Vec<i32> = passages.iter().filter_map(|p| p.score).collect();
    let mut bands: HashMap<Band, usize> = HashMap::new();
    let mut histogram = [0usize; BUCKETS];
    for score in &scores {
        *bands.entry(Band::of(*score)).or_default() += 1;
        histogram[bucket(*score)] += 1;
    }
    let band = |b: Band| count(bands.get(&b).copied().unwrap_or(0));
    QualityReport {
        average: average(&scores),
        bands: QualityBands {
            fair: band(Band::Fair),
            good: band(Band::Good),
            poor: band(Band::Poor),
            weak: band(Band::Weak),
        },
        histogram: histogram.into_iter().map(count).collect(),
        minimum: scores.iter().min().copied().map(i64::from),
        review_below: i64::from(review_below),
        review_first: review_first(passages, chapters),
        scored: count(scores.len()),
        to_review: count(
            passages
                .iter()
                .filter(|p| to_review(p, review_below))
                .count(),
        ),
        weakest_chapters: weakest_chapters(passages, chapters, review_below),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_fall_in_tens_with_a_perfect_score_in_the_last_bucket() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(9), 0);
        assert_eq!(bucket(10), 1);
        assert_eq!(bucket(89), 8);
        assert_eq!(bucket(90), 9);
        assert_eq!(bucket(100), 9);
        // Out of range scores stay in the histogram's ends.
        assert_eq!(bucket(-5), 0);
        assert_eq!(bucket(140), 9);
    }

    #[test]
    fn averages_are_rounded_to_one_decimal() {
        assert_eq!(average(&[]), None);
        assert_eq!(average(&[70, 71, 71]), Some(70.7));
        assert_eq!(average(&[100]), Some(100.0));
    }
}

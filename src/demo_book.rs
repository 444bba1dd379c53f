//! The demo's sample book: a short original story written for Dragoman (no
//! one else's text), as the JSON request of spec 2.4.

use dragoman_model::vocab::ResultFormat;
use serde::Serialize;

const PROLOGUE: &str = "The lighthouse at Vell had been dark for eleven winters when the letter arrived.\n\n\
It came folded twice, sealed with green wax, and addressed to nobody in particular: \"To whoever keeps the light.\"\n\n\
Nobody kept the light. That was the whole trouble.";

const CHAPTER_1: &str = "Ines Marrow read the letter standing in the doorway of the post office, because the rain had finally stopped and she did not trust it to stay stopped.\n\n\
\"Whoever keeps the light,\" she said aloud. The postmaster pretended not to listen, which was how he listened best.\n\n\
She had climbed the lighthouse once, at nine, on a dare. She remembered the smell of salt and old oil, and a staircase that turned so many times she had stopped counting and started singing instead.\n\n\
The letter asked for one thing: that the lamp be lit on the first night of the new moon. It did not say why. It did not need to. In Vell, the new moon was when the fishing boats came home.";

const CHAPTER_2: &str = "The key to the lighthouse hung in the mayor's kitchen, between a calendar from a shipping company that no longer existed and a painting of a dog that had never existed at all.\n\n\
\"You want to light it,\" the mayor said. It was not a question, and it was not quite a refusal either.\n\n\
\"Someone wrote to ask.\"\n\n\
\"Someone wrote.\" He turned the key over in his fingers. \"Eleven years, and now someone writes.\"\n\n\
He gave her the key. He also gave her a lantern, a box of matches, and the advice never to trust the fourth step from the top, which had been loose since before either of them was born.";

const CHAPTER_3: &str = "The lamp was larger than she remembered, and dustier, and it took her most of the afternoon to clean the lens until it shone like a second, smaller sea.\n\n\
At dusk she struck the first match. It went out. So did the second. The third caught, and the wick drank the flame slowly, as if it had forgotten how.\n\n\
Far out on the water, something answered: a small light, then another, then a whole line of them, rocking on the swell and turning toward the harbour.\n\n\
Ines sat on the top step, the one that was not loose, and watched them come home.";

/// The request the demo submits (spec 2.4), fields in the order the JSON
/// writes them.
#[derive(Serialize)]
pub struct DemoRequest<'a> {
    author: &'static str,
    chapters: [DemoChapter; 4],
    external_id: &'static str,
    output: Output,
    provider_id: &'a str,
    series: Series,
    source_language: &'static str,
    target_language: &'static str,
    volume: Volume,
}

/// One chapter of the sample book; the prologue has no number.
#[derive(Serialize)]
struct DemoChapter {
    content: &'static str,
    external_id: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    number: Option<i64>,
    title: &'static str,
}

#[derive(Serialize)]
struct Series {
    create_if_missing: bool,
    name: &'static str,
}

#[derive(Serialize)]
struct Volume {
    number: i64,
    title: &'static str,
}

#[derive(Serialize)]
struct Output {
    format: ResultFormat,
}

const TITLE: &str = "The Lighthouse at Vell";

/// The request the demo submits.
pub fn request(provider_id: &str) -> DemoRequest<'_> {
    let chapter = |external_id, number, title, content| DemoChapter {
        content,
        external_id,
        number,
        title,
    };
    DemoRequest {
        author: "Dragoman demo",
        chapters: [
            chapter("prologue", None, "Prologue", PROLOGUE),
            chapter("ch-1", Some(1), "The Letter", CHAPTER_1),
            chapter("ch-2", Some(2), "The Key", CHAPTER_2),
            chapter("ch-3", Some(3), "The Lamp", CHAPTER_3),
        ],
        external_id: "demo-lighthouse-vol-1",
        output: Output {
            format: ResultFormat::Json,
        },
        provider_id,
        series: Series {
            create_if_missing: true,
            name: TITLE,
        },
        source_language: "en",
        target_language: "fr",
        volume: Volume {
            number: 1,
            title: TITLE,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sample_request_is_the_json_of_spec_2_4() {
        let sent = serde_json::to_string_pretty(&request("p1")).expect("json");
        let expected = json!({
            "external_id": "demo-lighthouse-vol-1",
            "series": {"name": "The Lighthouse at Vell", "create_if_missing": true},
            "volume": {"number": 1, "title": "The Lighthouse at Vell"},
            "author": "Dragoman demo",
            "source_language": "en",
            "target_language": "fr",
            "provider_id": "p1",
            "chapters": [
                {"external_id": "prologue", "title": "Prologue", "content": PROLOGUE},
                {"external_id": "ch-1", "number": 1, "title": "The Letter", "content": CHAPTER_1},
                {"external_id": "ch-2", "number": 2, "title": "The Key", "content": CHAPTER_2},
                {"external_id": "ch-3", "number": 3, "title": "The Lamp", "content": CHAPTER_3},
            ],
            "output": {"format": "json"},
        });
        assert_eq!(sent, serde_json::to_string_pretty(&expected).expect("json"));
    }
}

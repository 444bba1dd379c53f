//! The demo's sample book: a short original story written for Dragoman (no
//! one else's text), as the JSON request of spec 2.4.

use serde_json::{Value, json};

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

/// The request the demo submits.
pub fn request(provider_id: &str) -> Value {
    json!({
        "external_id": "demo-lighthouse-vol-1",
        "series": {"name": "The Lighthouse at Vell", "create_if_missing": true},
        "volume": {"number": 1, "title": "The Lighthouse at Vell"},
        "author": "Dragoman demo",
        "source_language": "en",
        "target_language": "fr",
        "provider_id": provider_id,
        "chapters": [
            {"external_id": "prologue", "title": "Prologue", "content": PROLOGUE},
            {"external_id": "ch-1", "number": 1, "title": "The Letter", "content": CHAPTER_1},
            {"external_id": "ch-2", "number": 2, "title": "The Key", "content": CHAPTER_2},
            {"external_id": "ch-3", "number": 3, "title": "The Lamp", "content": CHAPTER_3},
        ],
        "output": {"format": "json"},
    })
}

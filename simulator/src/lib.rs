//! The provider simulator: an HTTP server speaking the protocols of every
//! provider kind (see `protocol.rs`), for tests, the demo and the
//! benchmarks. Nothing in the product depends on it.
//!
//! Routes: `POST /v1/chat/completions` and `POST /chat/completions` (so both
//! `http://host:port/v1` and `http://host:port` work as OpenAI base URLs;
//! `openai` and `openai_direct`), `POST /v1/messages` (Anthropic base URL
//! `http://host:port`), `POST /v1/responses` and `POST /responses` (the
//! Responses API, `openai_responses`), `POST /codex/responses` and
//! `POST /backend-api/codex/responses` (the ChatGPT Codex backend,
//! `codex_chatgpt`, base URL `http://host:port` or
//! `http://host:port/backend-api`; server-sent events only; a request
//! without a bearer token and a `chatgpt-account-id` header is answered
//! 401), `POST /v1/embeddings` and `POST /embeddings` (OpenAI-compatible
//! embeddings: deterministic, L2-normalised vectors of hashed word and
//! character-trigram features, `dimensions` honoured, 256 by default, the
//! model echoed; see `embeddings.rs`), `GET /stats` ([`SimulatorStats`] as
//! JSON), `GET /prompts` (the last
//! [`PROMPTS_KEPT`] well-formed requests' prompts, oldest first, as a JSON
//! array of [`Prompt`]: `{"n", "kind", "system", "user", "wire"}` plus the
//! `cache_key`, `organization`, `project` and `account_id` the request
//! carried, `kind` being `translation`, `analysis`, `review`, `notes` or
//! `other`)
//! and `GET /faults` (the
//! fault ledger: the last [`FAULTS_KEPT`] content faults and dropped
//! placeholders put in translation answers that went out whole, in the order
//! applied, as a JSON array of [`FaultRecord`]: `{"passage_id", "kind"}`,
//! `kind` being `name_drift`, `glossary_violation`, `untranslated`,
//! `wrong_language` or `dropped_placeholder`). Keys are not checked. With
//! `--prompt-log FILE` every such prompt is also appended to the file as a
//! JSON line.
//!
//! Batches (see `batches.rs`): OpenAI's Files API and `/batches` over
//! chat completions and Responses (`/v1/files`, `/v1/batches` and the
//! bare prefix), Anthropic's `/v1/messages/batches`, in memory. A batch
//! ends `--batch-delay-ms` after its creation, its calls answered then as
//! the ordinary requests of their protocol are (recorded, counted and
//! faulted alike), except every `--batch-fail-every`th call, which fails
//! with a server error; with `--batch-expire` it ends expired, half its
//! calls unanswered. `GET /batch-items` lists every call received in a
//! batch, oldest first: `{"batch_id", "custom_id", "wire", "kind",
//! "user", "received_at"}`.
//!
//! Answers. A user message in the analysis protocol of
//! `dragoman_pipeline::analysis` (`"task": "analysis"`) gets `{"analyses": [...]}`, a deterministic
//! reading of each passage (see `analysis.rs`: names, all-capitals terms,
//! tense and register, first words and first sentence). A user message in
//! the review protocol of `dragoman_pipeline::review` (`"task": "review"`)
//! gets `{"reviews": [...]}`: each translation compared with the faithful
//! pseudo-translation of its source under the message's glossary and
//! characters, and when they differ, that rendering as the correction with
//! one `major` flag coded `consistency` (see `review.rs`). A user message in
//! the reader-note protocol of `dragoman_pipeline::notes`
//! (`"task": "translator_notes"`) gets `{"notes": [...]}`: one note per term,
//! built from the term (see `notes.rs`). A user message in
//! the translation protocol of `dragoman_pipeline::translate` gets
//! `{"translations": [...]}` with a pseudo-translation of every passage
//! ([`pseudo::pseudo_translate`]), except that what the request's `context`
//! maps (its `Glossary`, `Characters` with their aliases, and `Places and
//! things` lines, `source => rendering`) is written as that rendering,
//! verbatim, wherever the source occurs as a whole word outside
//! placeholders, longest source first; without a match the answer is the
//! plain pseudo-translation. Any other user message is pseudo-translated as
//! plain text into `sim`. Usage is the
//! [`estimate_tokens`](dragoman_model::tokens::estimate_tokens) of the
//! system prompt plus the user message, and of the answer's text. Cached prompt
//! tokens follow the simulated prompt cache (`cache.rs`): the longest
//! cacheable prefix of the prompt (the system prompt, or the whole prompt)
//! seen before for the same protocol and model; Anthropic caches only the
//! prefixes marked `cache_control` and reports the writes. An answer longer
//! than the request's token limit is cut there (`length`, `max_tokens`, or
//! `incomplete` with `max_output_tokens`).
//!
//! Translator. That is `--translator pseudo`, the default. With
//! `--translator apertium` (and `--apertium-bin PATH`, else `apertium` on
//! `PATH`; the simulator does not start without it or without any mode
//! installed) translation and review answers are Apertium's real
//! translation for the message's language pair instead, the context's
//! renderings still verbatim and the placeholders exact (see
//! `apertium.rs` and `machine.rs`: one Apertium run per answer, the
//! translations kept in memory); the analysis answer keeps names and terms
//! as they are, and any other message is still pseudo-translated. A
//! translation or review message whose pair Apertium has not installed is
//! refused with a 400 whose error message says so and lists the installed
//! modes (a bad request: no prompt, no fault draw); an Apertium run that
//! fails or takes longer than a minute answers 500 (a server error).
//!
//! Transport faults. For every well-formed request, in arrival order, one
//! seeded RNG draws the same number of values, and the first fault whose
//! draw falls under its rate applies, in this order: 429 with `Retry-After`,
//! 500 (in a stream: a `response.failed` event), hang (no answer until the
//! client gives up or the server shuts down), a malformed JSON body (in a
//! stream: an event whose data is not JSON, then the end), truncated
//! content (the answer's JSON cut in the middle), a refusal, a dropped
//! placeholder in one passage (translation answers only; elsewhere, reviews
//! included, the request is answered normally). Latency, faults and rate
//! limits apply alike to every protocol. Each rate is
//! thus the chance of its fault among the requests the earlier ones spared;
//! with a given seed and request order the faults are always the same.
//!
//! Content faults, in translation answers only: name drift, glossary
//! violation, untranslated passage, wrong language (see `translation.rs`),
//! each in one passage of the answer when its draw falls under its rate.
//! They come from a second RNG, seeded from the seed and drawing the same
//! number of values for every well-formed translation request, so turning
//! them on never changes which transport faults a seed gives. Analyses and
//! reviews never carry them. A content fault does not change a request's
//! outcome: it is counted apart in [`SimulatorStats`]. Every content fault
//! and dropped placeholder of a translation answer that went out whole (not
//! truncated, not cut at `max_tokens`) is written in the fault ledger with
//! the passage that got it.

mod analysis;
mod apertium;
mod batches;
mod cache;
mod completions;
mod config;
mod context;
mod embeddings;
mod faults;
mod machine;
mod message;
mod notes;
mod prompts;
mod protocol;
pub mod pseudo;
mod replies;
mod review;
mod routes;
mod server;
mod state;
mod stats;
mod translation;

pub use batches::BatchItem;
pub use config::{SimulatorConfig, Translator};
pub use faults::{FaultKind, FaultRecord, KEPT as FAULTS_KEPT};
pub use prompts::{KEPT as PROMPTS_KEPT, Prompt};
pub use server::{RunningSimulator, serve};
pub use stats::SimulatorStats;

#[cfg(test)]
mod tests;

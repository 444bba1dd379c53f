//! The answer to a completion request of any protocol: the message read,
//! the prompt recorded, the transport and content faults drawn and applied,
//! the text composed by the translator, the usage counted.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::tokens::estimate_tokens;
use serde_json::Value;

use crate::message::Message;
use crate::prompts::Prompt;
use crate::protocol::{self, Content, Usage, Wire};
use crate::replies::{
    codex_authorized, hang, header_text, json_response, rate_limited, reply, sse_response,
};
use crate::state::{Fault, Shared};
use crate::translation::{self, ContentFaults};
use crate::{analysis, machine, notes, pseudo, review};

/// The longest prefix of `text` whose estimate stays within `max` tokens.
pub(crate) fn cut_to_tokens(text: &str, max: u64) -> &str {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let (mut ascii, mut other) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(3) + other > max {
            return &text[..i];
        }
    }
    text
}

/// `text` cut in the middle (on a character boundary).
pub(crate) fn cut_in_half(text: &str) -> &str {
    let half = text.chars().count() / 2;
    text.char_indices()
        .nth(half)
        .map_or(text, |(i, _)| &text[..i])
}

/// The answer to one completion request of `wire`'s protocol.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    wire: Wire,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    respond(shared, wire, headers, body, false).await
}

/// The answer to one call of a batch: what the ordinary request of
/// `wire`'s protocol would get, as its status and JSON body (a body that is
/// not JSON, from a malformed-answer fault, as a JSON string).
pub(crate) async fn batch_item(
    shared: Arc<Shared>,
    wire: Wire,
    headers: &HeaderMap,
    body: Bytes,
) -> (StatusCode, Value) {
    let response = respond(shared, wire, headers, body, true).await;
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, body)
}

/// One request's answer. A call of a batch (`batched`) waits for no
/// latency (the batch's delay stands for it), and a hang drawn for it is a
/// server error: the provider's own worker gives up on the call.
async fn respond(
    shared: Arc<Shared>,
    wire: Wire,
    headers: &HeaderMap,
    body: Bytes,
    batched: bool,
) -> Response {
    let n = count_request(&shared, wire);
    let refuse = |status: StatusCode, message: &str| {
        shared.count(|s| s.bad_requests += 1);
        let body = protocol::error(wire, protocol::error_kind(wire, status.as_u16()), message);
        json_response(status, body)
    };
    if wire == Wire::Codex && !codex_authorized(headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a bearer token and a chatgpt-account-id header are required",
        );
    }
    let request = match protocol::parse_request(wire, &body) {
        Ok(r) => r,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    let message = Message::read(&request.user);
    let mode = match apertium_mode(&shared, &message) {
        Ok(mode) => mode,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    shared.prompts.record(Prompt {
        n,
        kind: message.kind().to_owned(),
        system: request.system.clone(),
        user: request.user.clone(),
        wire: wire.name().to_owned(),
        cache_key: request.cache_key.clone(),
        organization: header_text(headers, "openai-organization"),
        project: header_text(headers, "openai-project"),
        account_id: header_text(headers, "chatgpt-account-id"),
    });
    let fault = match shared.draw() {
        Fault::Hang if batched => Fault::Server,
        fault => fault,
    };
    let content = match &message {
        Message::Translation(job) => {
            shared.draw_content(job.passages.iter().map(|p| p.text.as_str()))
        }
        _ => ContentFaults::default(),
    };
    if fault == Fault::Hang {
        return hang(&shared, wire).await;
    }
    if !batched && !shared.config.latency.is_zero() {
        tokio::time::sleep(shared.config.latency).await;
    }
    if let Some(failure) = transport_fault(&shared, wire, &request, n, fault) {
        return failure;
    }

    let tokens = |text: &str| u64::try_from(estimate_tokens(text)).unwrap_or(u64::MAX);
    let system_tokens = tokens(&request.system);
    let prompt = system_tokens.saturating_add(tokens(&request.user));
    let cache = shared.cache.serve(wire, &request, system_tokens, prompt);
    if cache.read > 0 {
        shared.count(|s| s.cached += 1);
    }
    let mut usage = Usage {
        prompt,
        completion: 0,
        cached: cache.read,
        written: cache.written,
    };
    if fault == Fault::Refusal {
        shared.count(|s| s.refusals += 1);
        usage.completion = match wire {
            Wire::Anthropic => 0,
            Wire::OpenAi | Wire::Responses | Wire::Codex => tokens(protocol::REFUSAL),
        };
        let refusal = Content {
            text: None,
            cut: false,
        };
        return reply(wire, &request, n, &refusal, &usage);
    }
    let drop = match fault {
        Fault::DropPlaceholder(pick) => Some(pick),
        _ => None,
    };
    let (full, applied) = match compose(
        &shared,
        &message,
        mode.as_deref(),
        &request.user,
        drop,
        &content,
    )
    .await
    {
        Ok(composed) => composed,
        Err(message) => {
            shared.count(|s| s.server_errors += 1);
            if request.stream {
                return sse_response(protocol::stream_failure(n, &request.model, &message));
            }
            let body = protocol::error(wire, protocol::error_kind(wire, 500), &message);
            return json_response(StatusCode::INTERNAL_SERVER_ERROR, body);
        }
    };
    let (text, cut) = shape_answer(&shared, &request, fault, &full, &applied);
    usage.completion = tokens(text);
    let answer = Content {
        text: Some(text),
        cut,
    };
    reply(wire, &request, n, &answer, &usage)
}

/// Counts a request by protocol; its number.
fn count_request(shared: &Shared, wire: Wire) -> u64 {
    let mut n = 0;
    shared.count(|s| {
        s.requests += 1;
        n = s.requests;
        match wire {
            Wire::OpenAi => s.openai += 1,
            Wire::Anthropic => s.anthropic += 1,
            Wire::Responses => s.responses += 1,
            Wire::Codex => s.codex += 1,
        }
    });
    n
}

/// The failure a transport fault answers instead of a completion, if the
/// drawn fault is one.
fn transport_fault(
    shared: &Shared,
    wire: Wire,
    request: &protocol::Request,
    n: u64,
    fault: Fault,
) -> Option<Response> {
    match fault {
        Fault::RateLimited => Some(rate_limited(shared, wire)),
        Fault::Server => {
            shared.count(|s| s.server_errors += 1);
            if request.stream {
                return Some(sse_response(protocol::stream_failure(
                    n,
                    &request.model,
                    "internal error",
                )));
            }
            let body = protocol::error(wire, protocol::error_kind(wire, 500), "internal error");
            Some(json_response(StatusCode::INTERNAL_SERVER_ERROR, body))
        }
        Fault::Malformed => {
            shared.count(|s| s.malformed += 1);
            if request.stream {
                return Some(sse_response(protocol::stream_malformed(n, &request.model)));
            }
            let mut response = protocol::malformed(wire, n).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Some(response)
        }
        _ => None,
    }
}

/// The composed text as sent: cut in half for a truncation fault, cut at
/// the request's `max_tokens`, or whole (with its content faults counted);
/// whether it was cut.
fn shape_answer<'a>(
    shared: &Shared,
    request: &protocol::Request,
    fault: Fault,
    full: &'a str,
    applied: &translation::Applied,
) -> (&'a str, bool) {
    let tokens = |text: &str| u64::try_from(estimate_tokens(text)).unwrap_or(u64::MAX);
    let mut text = full;
    let mut cut = false;
    if fault == Fault::Truncated {
        text = cut_in_half(text);
        cut = true;
        shared.count(|s| s.truncated += 1);
    } else if let Some(max) = request.max_tokens
        && tokens(text) > max
    {
        text = cut_to_tokens(text, max);
        cut = true;
        shared.count(|s| s.cut_at_max_tokens += 1);
    } else {
        shared.count(|s| {
            if applied.dropped_placeholder.is_some() {
                s.dropped_placeholders += 1;
            } else {
                s.ok += 1;
            }
            s.name_drifts += u64::from(applied.name_drift.is_some());
            s.glossary_violations += u64::from(applied.glossary_violation.is_some());
            s.untranslated += u64::from(applied.untranslated.is_some());
            s.wrong_language += u64::from(applied.wrong_language.is_some());
        });
        shared.faults.record(applied.records());
    }
    (text, cut)
}

/// The Apertium mode a translation or review message is translated in, in
/// `--translator apertium` mode (`None` in pseudo mode and for the other
/// messages); why not when its language pair is not installed.
fn apertium_mode(shared: &Shared, message: &Message) -> Result<Option<String>, String> {
    let Some(apertium) = &shared.apertium else {
        return Ok(None);
    };
    let (source, target) = match message {
        Message::Translation(job) => (&job.source_language, &job.target_language),
        Message::Review(m) => (&m.source_language, &m.target_language),
        Message::Analysis(_) | Message::Notes(_) | Message::Other => return Ok(None),
    };
    apertium.mode(source, target).map(Some)
}

/// The full text of the answer to `message` and the faults it carries;
/// fails when Apertium does (`mode` is the one [`apertium_mode`] gave).
async fn compose(
    shared: &Shared,
    message: &Message,
    mode: Option<&str>,
    user: &str,
    drop: Option<u64>,
    content: &ContentFaults,
) -> Result<(String, translation::Applied), String> {
    let apertium = shared.apertium.as_ref().zip(mode);
    let clean = translation::Applied::default;
    Ok(match (message, apertium) {
        (Message::Translation(job), None) => {
            translation::answer(job, drop, content, &translation::Pseudo(job))
        }
        (Message::Translation(job), Some((apertium, mode))) => {
            let alone = content.glossary_violation.is_some();
            let elsewhere = content.wrong_language.is_some();
            let rendering = machine::translation(apertium, mode, job, alone, elsewhere).await?;
            translation::answer(job, drop, content, &rendering)
        }
        (Message::Analysis(m), _) => {
            shared.count(|s| s.analyses += 1);
            let render: analysis::Render = if shared.apertium.is_some() {
                machine::keep
            } else {
                pseudo::render
            };
            (analysis::answer(m, render), clean())
        }
        (Message::Review(m), None) => {
            shared.count(|s| s.reviews += 1);
            (review::answer(m), clean())
        }
        (Message::Review(m), Some((apertium, mode))) => {
            let faithful = machine::review(apertium, mode, m).await?;
            shared.count(|s| s.reviews += 1);
            (review::answer_with(m, &faithful), clean())
        }
        (Message::Notes(m), _) => (notes::answer(m), clean()),
        (Message::Other, _) => (pseudo::pseudo_translate(user, "sim"), clean()),
    })
}

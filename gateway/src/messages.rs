//! Human messages of the error envelope, in French (the default) and in
//! English for callers that send `Accept-Language: en` (spec 2.12).

use axum::http::HeaderMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Fr,
    En,
}

impl Lang {
    /// Picks the language from `Accept-Language`: the first of `fr`/`en`
    /// by preference weight; French when neither is asked for.
    pub fn from_headers(headers: &HeaderMap) -> Lang {
        let Some(value) = headers
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
        else {
            return Lang::Fr;
        };
        let mut choices: Vec<(f32, usize, Lang)> = value
            .split(',')
            .enumerate()
            .filter_map(|(index, part)| {
                let mut pieces = part.trim().split(';');
                let tag = pieces.next()?.trim().to_ascii_lowercase();
                let weight = pieces
                    .find_map(|p| p.trim().strip_prefix("q=")?.parse::<f32>().ok())
                    .unwrap_or(1.0);
                let primary = tag.split('-').next()?;
                let lang = match primary {
                    "en" => Lang::En,
                    "fr" => Lang::Fr,
                    _ => return None,
                };
                (weight > 0.0).then_some((weight, index, lang))
            })
            .collect();
        choices.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        choices.first().map(|c| c.2).unwrap_or(Lang::Fr)
    }
}

/// (code, French, English) for every code the service answers.
const CATALOGUE: &[(&str, &str, &str)] = &[
    (
        "missing_token",
        "Jeton d'API manquant : envoyez l'en-tête Authorization: Bearer <jeton>.",
        "Missing API token: send the header Authorization: Bearer <token>.",
    ),
    (
        "invalid_token",
        "Jeton d'API invalide.",
        "Invalid API token.",
    ),
    (
        "revoked_token",
        "Ce jeton d'API a été révoqué.",
        "This API token has been revoked.",
    ),
    (
        "expired_token",
        "Ce jeton d'API a expiré.",
        "This API token has expired.",
    ),
    (
        "inactive_account",
        "Ce compte est désactivé.",
        "This account is disabled.",
    ),
    (
        "unauthorized",
        "Authentification requise.",
        "Authentication required.",
    ),
    (
        "insufficient_scope",
        "Le jeton n'a pas la portée requise pour cette opération.",
        "The token lacks the scope this operation needs.",
    ),
    ("forbidden", "Opération interdite.", "Forbidden."),
    (
        "admin_required",
        "Cette opération est réservée aux administrateurs.",
        "This operation is for administrators only.",
    ),
    (
        "priority_not_allowed",
        "Cette priorité dépasse le plafond autorisé.",
        "This priority exceeds the allowed ceiling.",
    ),
    (
        "demo_read_only",
        "Le mode démonstration est en lecture seule.",
        "Demo mode is read-only.",
    ),
    (
        "budget_exceeded",
        "Le plafond de dépenses du jeton est atteint.",
        "The token's spending cap has been reached.",
    ),
    (
        "licence_quota_insufficient",
        "Le quota de mots de la licence est insuffisant.",
        "The licence word quota is insufficient.",
    ),
    (
        "allowance_insufficient",
        "L'allocation mensuelle du compte est insuffisante.",
        "The account's monthly allowance is insufficient.",
    ),
    (
        "automation_not_licensed",
        "La licence n'inclut pas l'API d'automatisation.",
        "The licence does not include the automation API.",
    ),
    ("not_found", "Ressource introuvable.", "Resource not found."),
    (
        "series_not_found",
        "Série introuvable.",
        "Series not found.",
    ),
    (
        "request_not_found",
        "Demande introuvable.",
        "Request not found.",
    ),
    (
        "volume_not_found",
        "Volume introuvable.",
        "Volume not found.",
    ),
    (
        "glossary_not_found",
        "Glossaire introuvable.",
        "Glossary not found.",
    ),
    ("token_not_found", "Jeton introuvable.", "Token not found."),
    (
        "method_not_allowed",
        "Méthode non autorisée pour cette adresse.",
        "Method not allowed for this address.",
    ),
    (
        "token_limit",
        "Le compte détient déjà le nombre maximal de jetons actifs.",
        "The account already holds the maximum number of non-revoked tokens.",
    ),
    (
        "username_taken",
        "Ce nom d'utilisateur est déjà pris.",
        "This username is already taken.",
    ),
    (
        "provider_exists",
        "Un fournisseur porte déjà ce nom.",
        "A provider with this name already exists.",
    ),
    (
        "idempotency_conflict",
        "Cette clé d'idempotence a déjà servi pour un autre contenu.",
        "This idempotency key was already used for different content.",
    ),
    (
        "chapter_conflict",
        "Des chapitres déjà importés ont un autre texte.",
        "Chapters already imported have a different text.",
    ),
    (
        "conflict",
        "L'état actuel ne permet pas cette opération.",
        "The current state does not allow this operation.",
    ),
    ("volume_conflict", "Conflit de volume.", "Volume conflict."),
    (
        "series_archived",
        "La série est archivée.",
        "The series is archived.",
    ),
    (
        "volume_archived",
        "Le volume est archivé.",
        "The volume is archived.",
    ),
    (
        "not_started",
        "Le travail n'a pas commencé.",
        "The job has not started.",
    ),
    (
        "result_not_ready",
        "Le résultat n'est pas encore prêt.",
        "The result is not ready yet.",
    ),
    (
        "request_failed",
        "La demande a échoué.",
        "The request failed.",
    ),
    (
        "request_cancelled",
        "La demande a été annulée.",
        "The request was cancelled.",
    ),
    (
        "format_unavailable",
        "Ce format n'est pas disponible pour cette demande.",
        "This format is not available for this request.",
    ),
    (
        "glossary_exists",
        "Un glossaire porte déjà ce nom.",
        "A glossary with this name already exists.",
    ),
    (
        "payload_too_large",
        "Le corps de la requête est trop volumineux.",
        "The request body is too large.",
    ),
    (
        "unsupported_media_type",
        "Type de contenu non pris en charge.",
        "Unsupported content type.",
    ),
    (
        "invalid_payload",
        "Le contenu envoyé est invalide.",
        "The submitted content is invalid.",
    ),
    (
        "invalid_idempotency_key",
        "La clé d'idempotence est invalide (1 à 200 caractères imprimables).",
        "The idempotency key is invalid (1 to 200 printable characters).",
    ),
    (
        "unknown_provider",
        "Fournisseur inconnu.",
        "Unknown provider.",
    ),
    (
        "provider_required",
        "Aucun fournisseur n'est défini pour cette demande.",
        "No provider is set for this request.",
    ),
    (
        "invalid_epub",
        "Le fichier EPUB est invalide.",
        "The EPUB file is invalid.",
    ),
    (
        "callback_refused",
        "L'adresse de rappel est refusée.",
        "The callback URL is refused.",
    ),
    (
        "invalid_placement",
        "Placement invalide.",
        "Invalid placement.",
    ),
    (
        "invalid_request",
        "Paramètres de requête invalides.",
        "Invalid request parameters.",
    ),
    ("invalid_name", "Nom invalide.", "Invalid name."),
    (
        "delivery_failed",
        "Le résultat n'a pas pu être produit.",
        "The result could not be produced.",
    ),
    (
        "rate_limited",
        "Trop de requêtes ; réessayez plus tard.",
        "Too many requests; retry later.",
    ),
    (
        "queue_full",
        "La file d'attente est pleine.",
        "The queue is full.",
    ),
    (
        "server_error",
        "Erreur interne du serveur (référence : {reference}).",
        "Internal server error (reference: {reference}).",
    ),
];

/// The catalogue's static name for `code`, when the service knows it.
pub fn known_code(code: &str) -> Option<&'static str> {
    CATALOGUE.iter().find(|c| c.0 == code).map(|c| c.0)
}

/// The message for `code`, with `{reference}` filled from `reference`.
pub fn message(code: &str, lang: Lang, reference: Option<&str>) -> String {
    let text = CATALOGUE
        .iter()
        .find(|c| c.0 == code)
        .map(|c| if lang == Lang::En { c.2 } else { c.1 })
        .unwrap_or(if lang == Lang::En {
            "Error."
        } else {
            "Erreur."
        });
    text.replace("{reference}", reference.unwrap_or("-"))
}

/// Message of a validation issue, from its kind and limits (never the value).
pub fn issue_message(kind: &str, lang: Lang, ctx: Option<&serde_json::Value>) -> String {
    let get = |k: &str| {
        ctx.and_then(|c| c.get(k))
            .map(|v| v.to_string().trim_matches('"').to_owned())
            .unwrap_or_default()
    };
    let (fr, en) = match kind {
        "missing" => (
            "Champ obligatoire manquant.".to_owned(),
            "Field required.".to_owned(),
        ),
        "extra_forbidden" => ("Champ inconnu.".to_owned(), "Unknown field.".to_owned()),
        "type_error" => (
            "Type de valeur incorrect.".to_owned(),
            "Wrong value type.".to_owned(),
        ),
        "json_invalid" => ("JSON mal formé.".to_owned(), "Malformed JSON.".to_owned()),
        "string_too_short" => (
            format!("Au moins {} caractère(s).", get("min")),
            format!("At least {} character(s).", get("min")),
        ),
        "string_too_long" => (
            format!("Au plus {} caractères.", get("max")),
            format!("At most {} characters.", get("max")),
        ),
        "out_of_range" => (
            format!(
                "Valeur hors de l'intervalle {} à {}.",
                get("min"),
                get("max")
            ),
            format!("Value outside the range {} to {}.", get("min"), get("max")),
        ),
        "enum" => (
            format!(
                "Valeur non permise ; valeurs possibles : {}.",
                get("expected")
            ),
            format!("Value not allowed; expected one of: {}.", get("expected")),
        ),
        "empty_list" => (
            "La liste ne peut pas être vide.".to_owned(),
            "The list must not be empty.".to_owned(),
        ),
        "duplicate" => ("Valeur répétée.".to_owned(), "Repeated value.".to_owned()),
        "too_many" => (
            format!("Au plus {} éléments.", get("max")),
            format!("At most {} items.", get("max")),
        ),
        "pattern" => (
            "Format non valide.".to_owned(),
            "Invalid format.".to_owned(),
        ),
        "not_positive" => (
            "La valeur doit être positive.".to_owned(),
            "The value must be positive.".to_owned(),
        ),
        _ => ("Valeur invalide.".to_owned(), "Invalid value.".to_owned()),
    };
    if lang == Lang::En { en } else { fr }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn lang(value: &str) -> Lang {
        let mut headers = HeaderMap::new();
        headers.insert("accept-language", HeaderValue::from_str(value).unwrap());
        Lang::from_headers(&headers)
    }

    #[test]
    fn english_only_when_preferred() {
        assert_eq!(lang("en"), Lang::En);
        assert_eq!(lang("en-GB,fr;q=0.5"), Lang::En);
        assert_eq!(lang("fr-FR,en;q=0.8"), Lang::Fr);
        assert_eq!(lang("de, en;q=0.3"), Lang::En);
        assert_eq!(lang("de"), Lang::Fr);
        assert_eq!(Lang::from_headers(&HeaderMap::new()), Lang::Fr);
    }

    #[test]
    fn every_code_has_both_languages() {
        for (code, fr, en) in CATALOGUE {
            assert!(!fr.is_empty() && !en.is_empty() && fr != en, "{code}");
        }
    }
}

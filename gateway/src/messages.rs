//! Human messages of the error envelope, in French (the default) and in
//! English for callers that send `Accept-Language: en` (spec 2.12).

use axum::http::HeaderMap;
use dragoman_model::vocab::{ErrorCode, IssueContext, IssueKind};

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

/// (French, English) message of `code`. The match has no fallback arm, so
/// a code added to the vocabulary does not compile until both messages are
/// written here. (Long by design: one arm per code, kept in one table.)
pub fn texts(code: ErrorCode) -> (&'static str, &'static str) {
    match code {
        ErrorCode::MissingToken => (
            "Jeton d'API manquant : envoyez l'en-tête Authorization: Bearer <jeton>.",
            "Missing API token: send the header Authorization: Bearer <token>.",
        ),
        ErrorCode::InvalidToken => ("Jeton d'API invalide.", "Invalid API token."),
        ErrorCode::RevokedToken => (
            "Ce jeton d'API a été révoqué.",
            "This API token has been revoked.",
        ),
        ErrorCode::ExpiredToken => ("Ce jeton d'API a expiré.", "This API token has expired."),
        ErrorCode::InactiveAccount => ("Ce compte est désactivé.", "This account is disabled."),
        ErrorCode::Unauthorized => ("Authentification requise.", "Authentication required."),
        ErrorCode::InsufficientScope => (
            "Le jeton n'a pas la portée requise pour cette opération.",
            "The token lacks the scope this operation needs.",
        ),
        ErrorCode::Forbidden => ("Opération interdite.", "Forbidden."),
        ErrorCode::AdminRequired => (
            "Cette opération est réservée aux administrateurs.",
            "This operation is for administrators only.",
        ),
        ErrorCode::PriorityNotAllowed => (
            "Cette priorité dépasse le plafond autorisé.",
            "This priority exceeds the allowed ceiling.",
        ),
        ErrorCode::DemoReadOnly => (
            "Le mode démonstration est en lecture seule.",
            "Demo mode is read-only.",
        ),
        ErrorCode::BudgetExceeded | ErrorCode::BudgetStillReached => (
            "Le plafond de dépenses du jeton est atteint.",
            "The token's spending cap has been reached.",
        ),
        ErrorCode::LicenceQuotaInsufficient => (
            "Le quota de mots de la licence est insuffisant.",
            "The licence word quota is insufficient.",
        ),
        ErrorCode::AllowanceInsufficient => (
            "L'allocation mensuelle du compte est insuffisante.",
            "The account's monthly allowance is insufficient.",
        ),
        ErrorCode::AutomationNotLicensed => (
            "La licence n'inclut pas l'API d'automatisation.",
            "The licence does not include the automation API.",
        ),
        ErrorCode::NotFound => ("Ressource introuvable.", "Resource not found."),
        ErrorCode::SeriesNotFound => ("Série introuvable.", "Series not found."),
        ErrorCode::RequestNotFound => ("Demande introuvable.", "Request not found."),
        ErrorCode::VolumeNotFound => ("Volume introuvable.", "Volume not found."),
        ErrorCode::GlossaryNotFound => ("Glossaire introuvable.", "Glossary not found."),
        ErrorCode::TokenNotFound => ("Jeton introuvable.", "Token not found."),
        ErrorCode::TermNotFound => ("Terme introuvable.", "Term not found."),
        ErrorCode::MethodNotAllowed => (
            "Méthode non autorisée pour cette adresse.",
            "Method not allowed for this address.",
        ),
        ErrorCode::NotAcceptable => (
            "Aucun des types de contenu acceptés (en-tête Accept) n'est proposé ici.",
            "None of the accepted media types (Accept header) is offered here.",
        ),
        ErrorCode::BadRequest => ("Requête mal formée.", "Malformed request."),
        ErrorCode::TokenLimit => (
            "Le compte détient déjà le nombre maximal de jetons actifs.",
            "The account already holds the maximum number of non-revoked tokens.",
        ),
        ErrorCode::UsernameTaken => (
            "Ce nom d'utilisateur est déjà pris.",
            "This username is already taken.",
        ),
        ErrorCode::SecondFactorRequired => (
            "Ce compte demande un code de second facteur : renvoyez la connexion avec « code ».",
            "This account has a second factor: sign in again with a \"code\".",
        ),
        ErrorCode::UserNotFound => ("Utilisateur introuvable.", "User not found."),
        ErrorCode::MailNotFound => (
            "Ce courriel n'est pas dans la file d'envoi.",
            "This mail is not in the outbox.",
        ),
        ErrorCode::LastAdministrator => (
            "C'est le dernier administrateur actif : il ne peut être supprimé, désactivé ni rétrogradé.",
            "This is the last active administrator: it cannot be deleted, disabled or demoted.",
        ),
        ErrorCode::AccountNotEmpty => (
            "Ce compte possède encore des séries, glossaires, demandes ou réglages de fournisseur : indiquez transfer_to.",
            "This account still owns series, glossaries, requests or provider defaults: name transfer_to.",
        ),
        ErrorCode::SeatLimit => (
            "La licence ne permet pas d'autre compte actif.",
            "The licence allows no further active account.",
        ),
        ErrorCode::PassageNotFound => ("Passage introuvable.", "Passage not found."),
        ErrorCode::StaleEdit => (
            "Ce contenu a changé depuis sa lecture : relisez-le avant de le modifier.",
            "This changed since it was read: read it again before editing it.",
        ),
        ErrorCode::LibraryNotConfigured => (
            "Aucun dossier de bibliothèque n'est configuré.",
            "No library folder is configured.",
        ),
        ErrorCode::NothingToPublish => (
            "Ce livre n'a pas encore d'EPUB livré à publier.",
            "This book has no delivered EPUB to publish yet.",
        ),
        ErrorCode::BatchForeign => (
            "Ce lot du fournisseur n'appartient pas à ce travail.",
            "This provider batch does not belong to this job.",
        ),
        ErrorCode::BatchUnfinished => (
            "Le fournisseur n'a pas terminé ce lot : réessayez quand il sera terminé.",
            "The provider has not finished this batch: try again once it has.",
        ),
        ErrorCode::BatchUnverified => (
            "Le fournisseur n'a pas pu confirmer ce lot.",
            "The provider could not confirm this batch.",
        ),
        ErrorCode::MissingPlaceholders => (
            "La traduction perd des balises du passage.",
            "The translation drops placeholders of the passage's markup.",
        ),
        ErrorCode::MailNotConfigured => (
            "Aucun serveur de courrier n'est configuré.",
            "No mail server is configured.",
        ),
        ErrorCode::PublicUrlRequired => (
            "Les liens de réinitialisation demandent l'adresse publique du service (DRAGOMAN_PUBLIC_URL).",
            "Password-reset links need the service's public address (DRAGOMAN_PUBLIC_URL).",
        ),
        ErrorCode::SecondFactorEnabled => (
            "Ce compte a déjà un second facteur.",
            "This account already has a second factor.",
        ),
        ErrorCode::InvalidCode => ("Ce code ne convient pas.", "This code does not match."),
        ErrorCode::InvalidResetLink => (
            "Ce lien de réinitialisation est inconnu, déjà utilisé ou expiré.",
            "This reset link is unknown, already used or expired.",
        ),
        ErrorCode::ProviderExists => (
            "Un fournisseur porte déjà ce nom.",
            "A provider with this name already exists.",
        ),
        ErrorCode::IdempotencyConflict => (
            "Cette clé d'idempotence a déjà servi pour un autre contenu.",
            "This idempotency key was already used for different content.",
        ),
        ErrorCode::ChapterConflict => (
            "Des chapitres déjà importés ont un autre texte.",
            "Chapters already imported have a different text.",
        ),
        ErrorCode::Conflict => (
            "L'état actuel ne permet pas cette opération.",
            "The current state does not allow this operation.",
        ),
        ErrorCode::VolumeConflict => ("Conflit de volume.", "Volume conflict."),
        ErrorCode::SeriesArchived => ("La série est archivée.", "The series is archived."),
        ErrorCode::VolumeArchived => ("Le volume est archivé.", "The volume is archived."),
        ErrorCode::NotStarted => ("Le travail n'a pas commencé.", "The job has not started."),
        ErrorCode::ResultNotReady => (
            "Le résultat n'est pas encore prêt.",
            "The result is not ready yet.",
        ),
        ErrorCode::RequestFailed => ("La demande a échoué.", "The request failed."),
        ErrorCode::RequestCancelled => ("La demande a été annulée.", "The request was cancelled."),
        ErrorCode::FormatUnavailable => (
            "Ce format n'est pas disponible pour cette demande.",
            "This format is not available for this request.",
        ),
        ErrorCode::SeriesSuspended => (
            "La série est suspendue : reprenez-la avant de lancer un travail.",
            "The series is suspended: resume it before starting work.",
        ),
        ErrorCode::NotOwnJob => (
            "Ce travail a été lancé par un autre jeton.",
            "This job was started by another token.",
        ),
        ErrorCode::GlossaryExists => (
            "Un glossaire porte déjà ce nom.",
            "A glossary with this name already exists.",
        ),
        ErrorCode::PayloadTooLarge => (
            "Le corps de la requête est trop volumineux.",
            "The request body is too large.",
        ),
        ErrorCode::UnsupportedMediaType => (
            "Type de contenu non pris en charge.",
            "Unsupported content type.",
        ),
        ErrorCode::InvalidPayload => (
            "Le contenu envoyé est invalide.",
            "The submitted content is invalid.",
        ),
        ErrorCode::InvalidIdempotencyKey => (
            "La clé d'idempotence est invalide (1 à 200 caractères imprimables).",
            "The idempotency key is invalid (1 to 200 printable characters).",
        ),
        ErrorCode::UnknownProvider => ("Fournisseur inconnu.", "Unknown provider."),
        ErrorCode::ProviderRequired => (
            "Aucun fournisseur n'est défini pour cette demande.",
            "No provider is set for this request.",
        ),
        ErrorCode::InvalidEpub => ("Le fichier EPUB est invalide.", "The EPUB file is invalid."),
        ErrorCode::CallbackRefused => (
            "L'adresse de rappel est refusée.",
            "The callback URL is refused.",
        ),
        ErrorCode::InvalidPlacement => ("Placement invalide.", "Invalid placement."),
        ErrorCode::InvalidRequest => (
            "Paramètres de requête invalides.",
            "Invalid request parameters.",
        ),
        ErrorCode::InvalidName => ("Nom invalide.", "Invalid name."),
        ErrorCode::DeliveryFailed => (
            "Le résultat n'a pas pu être produit.",
            "The result could not be produced.",
        ),
        ErrorCode::RateLimited => (
            "Trop de requêtes ; réessayez plus tard.",
            "Too many requests; retry later.",
        ),
        ErrorCode::QueueFull => ("La file d'attente est pleine.", "The queue is full."),
        ErrorCode::ServerError => (
            "Erreur interne du serveur (référence : {reference}).",
            "Internal server error (reference: {reference}).",
        ),
        ErrorCode::ServiceUnavailable => (
            "Le service est momentanément indisponible : rien n'a été fait ; réessayez dans quelques secondes.",
            "The service is temporarily unavailable: nothing was done; retry in a few seconds.",
        ),
    }
}

/// The message for `code`, with `{reference}` filled from `reference`.
pub fn message(code: ErrorCode, lang: Lang, reference: Option<&str>) -> String {
    let (fr, en) = texts(code);
    let text = if lang == Lang::En { en } else { fr };
    text.replace("{reference}", reference.unwrap_or("-"))
}

/// Message of a validation issue, from its kind and limits (never the value).
pub fn issue_message(kind: IssueKind, lang: Lang, ctx: Option<&IssueContext>) -> String {
    let get = |k: &str| ctx.and_then(|c| c.get(k)).map(ToString::to_string);
    let (fr, en) = match kind {
        IssueKind::Missing => (
            "Champ obligatoire manquant.".to_owned(),
            "Field required.".to_owned(),
        ),
        IssueKind::ExtraForbidden => ("Champ inconnu.".to_owned(), "Unknown field.".to_owned()),
        IssueKind::TypeError => (
            "Type de valeur incorrect.".to_owned(),
            "Wrong value type.".to_owned(),
        ),
        IssueKind::JsonInvalid => ("JSON mal formé.".to_owned(), "Malformed JSON.".to_owned()),
        IssueKind::StringTooShort => {
            let min = get("min").unwrap_or_default();
            (
                format!("Au moins {min} caractère(s)."),
                format!("At least {min} character(s)."),
            )
        }
        IssueKind::StringTooLong => {
            let max = get("max").unwrap_or_default();
            (
                format!("Au plus {max} caractères."),
                format!("At most {max} characters."),
            )
        }
        // `expected` states a range the bounds alone cannot (an open end).
        IssueKind::OutOfRange => match (get("expected"), get("min"), get("max")) {
            (Some(expected), _, _) => (
                format!("Valeur hors de l'intervalle permis : {expected}."),
                format!("Value outside the allowed range: {expected}."),
            ),
            (None, Some(min), Some(max)) => (
                format!("Valeur hors de l'intervalle {min} à {max}."),
                format!("Value outside the range {min} to {max}."),
            ),
            (None, Some(min), None) => (
                format!("La valeur doit être au moins {min}."),
                format!("The value must be at least {min}."),
            ),
            (None, None, Some(max)) => (
                format!("La valeur doit être au plus {max}."),
                format!("The value must be at most {max}."),
            ),
            (None, None, None) => (
                "Valeur hors de l'intervalle permis.".to_owned(),
                "Value outside the allowed range.".to_owned(),
            ),
        },
        IssueKind::Enum => match get("expected") {
            Some(expected) => (
                format!("Valeur non permise ; valeurs possibles : {expected}."),
                format!("Value not allowed; expected one of: {expected}."),
            ),
            None => (
                "Valeur non permise.".to_owned(),
                "Value not allowed.".to_owned(),
            ),
        },
        IssueKind::EmptyList => (
            "La liste ne peut pas être vide.".to_owned(),
            "The list must not be empty.".to_owned(),
        ),
        IssueKind::Duplicate => ("Valeur répétée.".to_owned(), "Repeated value.".to_owned()),
        IssueKind::TooMany => {
            let max = get("max").unwrap_or_default();
            (
                format!("Au plus {max} éléments."),
                format!("At most {max} items."),
            )
        }
        IssueKind::Pattern => (
            "Format non valide.".to_owned(),
            "Invalid format.".to_owned(),
        ),
        IssueKind::NotPositive => (
            "La valeur doit être positive.".to_owned(),
            "The value must be positive.".to_owned(),
        ),
        IssueKind::ValueError => ("Valeur invalide.".to_owned(), "Invalid value.".to_owned()),
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
    fn every_code_has_its_own_message_in_both_languages() {
        for code in ErrorCode::ALL {
            let (fr, en) = texts(*code);
            assert!(!fr.is_empty() && !en.is_empty(), "{code:?}");
            assert_ne!(fr, en, "{code:?} is not translated");
            for other in ErrorCode::ALL {
                if other.code() != code.code() {
                    let (other_fr, other_en) = texts(*other);
                    assert_ne!(fr, other_fr, "{code:?} and {other:?}");
                    assert_ne!(en, other_en, "{code:?} and {other:?}");
                }
            }
        }
    }

    #[test]
    fn the_resume_refusal_shares_the_budget_message() {
        assert_eq!(
            texts(ErrorCode::BudgetStillReached),
            texts(ErrorCode::BudgetExceeded)
        );
    }

    #[test]
    fn server_errors_quote_their_reference() {
        let text = message(ErrorCode::ServerError, Lang::En, Some("abc123"));
        assert!(text.contains("abc123"), "{text}");
        assert!(!message(ErrorCode::ServerError, Lang::Fr, None).contains("{reference}"));
    }

    #[test]
    fn issue_messages_state_limits_not_values() {
        let ctx = IssueContext::new().expected("low, normal, high");
        assert_eq!(
            issue_message(IssueKind::Enum, Lang::En, Some(&ctx)),
            "Value not allowed; expected one of: low, normal, high."
        );
        assert_eq!(
            issue_message(IssueKind::Enum, Lang::En, None),
            "Value not allowed."
        );
        let ctx = IssueContext::new().min(1).max(200);
        assert_eq!(
            issue_message(IssueKind::OutOfRange, Lang::Fr, Some(&ctx)),
            "Valeur hors de l'intervalle 1 à 200."
        );
        let ctx = IssueContext::new().min(0);
        assert_eq!(
            issue_message(IssueKind::OutOfRange, Lang::En, Some(&ctx)),
            "The value must be at least 0."
        );
        let ctx = IssueContext::new().min(0).expected("0 <= x < 1");
        assert_eq!(
            issue_message(IssueKind::OutOfRange, Lang::En, Some(&ctx)),
            "Value outside the allowed range: 0 <= x < 1."
        );
        for kind in IssueKind::ALL {
            let fr = issue_message(*kind, Lang::Fr, None);
            let en = issue_message(*kind, Lang::En, None);
            assert!(!fr.is_empty() && fr != en, "{kind:?}");
        }
    }
}

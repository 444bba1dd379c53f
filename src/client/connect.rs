//! The connection to a running server's public gRPC services: a channel to
//! its HTTP address (HTTP/2 without TLS), and on every call the API token
//! read from the environment (`authorization: Bearer …`) and the language
//! of the server's messages (`accept-language`).

use super::error::ClientError;
use crate::commands::ServerArgs;
use dragoman_proto::api::v1::translations_service_client::TranslationsServiceClient;
use std::time::Duration;
use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// A status document lists every chapter: far above tonic's 4 MiB default
/// for a long book.
const MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The client of `TranslationsService`, its calls carrying [`CallMetadata`].
pub type Translations = TranslationsServiceClient<InterceptedService<Channel, CallMetadata>>;

/// What every call carries.
#[derive(Clone)]
pub struct CallMetadata {
    authorization: AsciiMetadataValue,
    language: Option<AsciiMetadataValue>,
}

impl Interceptor for CallMetadata {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        let metadata = request.metadata_mut();
        metadata.insert("authorization", self.authorization.clone());
        if let Some(language) = &self.language {
            metadata.insert("accept-language", language.clone());
        }
        Ok(request)
    }
}

/// The API token held by the environment variable `variable`.
pub fn token(variable: &str) -> Result<String, ClientError> {
    match std::env::var(variable) {
        Ok(token) if !token.trim().is_empty() => Ok(token.trim().to_owned()),
        _ => Err(ClientError::NoToken {
            variable: variable.to_owned(),
        }),
    }
}

/// The language to ask for: `--lang`, else the locale's when it is one the
/// server speaks (`None` leaves the server's default, French).
pub fn language(flag: Option<&str>) -> Option<&'static str> {
    if let Some(flag) = flag {
        return locale_language(flag);
    }
    // POSIX order: the first variable set decides.
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.is_empty())
        .and_then(|value| locale_language(&value))
}

/// `en` or `fr` of a locale (`en_US.UTF-8`, `fr`, `fr-CA`); `None` for
/// any other (`C`, `POSIX`, `de_DE`).
pub fn locale_language(locale: &str) -> Option<&'static str> {
    let primary = locale
        .split(['_', '-', '.', '@'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match primary.as_str() {
        "en" => Some("en"),
        "fr" => Some("fr"),
        _ => None,
    }
}

/// Opens the channel to `--server` with the token of `--token-env`. The
/// token is read first: without one nothing is sent.
pub async fn connect(args: &ServerArgs) -> Result<Translations, ClientError> {
    let token = token(&args.token_env)?;
    let authorization: AsciiMetadataValue = MetadataValue::try_from(format!("Bearer {token}"))
        .map_err(|_| ClientError::BadToken {
            variable: args.token_env.clone(),
        })?;
    let language = language(args.lang.as_deref()).map(AsciiMetadataValue::from_static);
    check_server(&args.server)?;
    let endpoint = Endpoint::from_shared(args.server.clone())
        .map_err(|e| ClientError::ServerAddress {
            url: args.server.clone(),
            detail: e.to_string(),
        })?
        .connect_timeout(CONNECT_TIMEOUT);
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| ClientError::Unreachable {
            url: args.server.clone(),
            detail: error_chain(&e),
        })?;
    Ok(TranslationsServiceClient::with_interceptor(
        channel,
        CallMetadata {
            authorization,
            language,
        },
    )
    .max_decoding_message_size(MAX_ANSWER_BYTES))
}

/// `--server` must be an `http://` URL: this client speaks HTTP/2 without
/// TLS, and would send the token in clear to an `https://` address.
pub fn check_server(server: &str) -> Result<(), ClientError> {
    let refuse = |detail: &str| ClientError::ServerAddress {
        url: server.to_owned(),
        detail: detail.to_owned(),
    };
    let url = url::Url::parse(server).map_err(|e| refuse(&e.to_string()))?;
    match url.scheme() {
        "http" if url.host().is_some() => Ok(()),
        "http" => Err(refuse("no host")),
        "https" => Err(refuse(
            "this client speaks HTTP/2 without TLS only; give the server's http:// address",
        )),
        _ => Err(refuse(
            "expected an http:// address, such as http://127.0.0.1:8080",
        )),
    }
}

/// An error and its causes on one line: a transport error's own text
/// ("transport error") says nothing without them.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Layers often repeat their cause's words; say them once.
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locale_asks_for_english_or_french_only() {
        assert_eq!(locale_language("en_US.UTF-8"), Some("en"));
        assert_eq!(locale_language("fr_CA"), Some("fr"));
        assert_eq!(locale_language("en"), Some("en"));
        assert_eq!(locale_language("C.UTF-8"), None);
        assert_eq!(locale_language("de_DE@euro"), None);
        assert_eq!(locale_language(""), None);
    }

    #[test]
    fn the_flag_decides_over_the_locale() {
        assert_eq!(language(Some("en")), Some("en"));
        assert_eq!(language(Some("fr")), Some("fr"));
    }

    #[test]
    fn only_an_http_address_is_a_server() {
        assert!(check_server("http://127.0.0.1:8080").is_ok());
        assert!(check_server("http://dragoman.internal").is_ok());
        for refused in [
            "https://dragoman.example",
            "nonsense",
            "127.0.0.1:8080",
            "ftp://x",
        ] {
            let error = check_server(refused).expect_err(refused);
            assert_eq!(
                error.exit_code(),
                super::super::error::EXIT_USAGE,
                "{refused}"
            );
            assert!(error.to_string().contains(refused), "{error}");
        }
    }

    #[test]
    fn a_missing_or_empty_token_variable_names_the_variable() {
        let error = token("DRAGOMAN_TEST_NO_SUCH_TOKEN_VARIABLE").expect_err("unset");
        assert!(
            error
                .to_string()
                .contains("DRAGOMAN_TEST_NO_SUCH_TOKEN_VARIABLE"),
            "{error}"
        );
    }
}

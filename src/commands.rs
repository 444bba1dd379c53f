//! One-shot commands: migrations, accounts and providers. They open the
//! database themselves and call the owning crate's domain functions. Also
//! the command line of the clients of a running server (`translate`,
//! `status`, `result`), which `crate::client` runs.

use crate::config::Config;
use crate::error::Error;
use clap::Subcommand;
use dragoman_gateway::auth::bearer::{TOKEN_CACHE_TTL, announce_tokens_changed};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::coordination::RedisCoordination;
use dragoman_model::provider_input::NewProvider;
use dragoman_model::vocab::ProviderKind;
use dragoman_proto::wire::WireEnum;
use sea_orm::DatabaseConnection;
use std::path::PathBuf;

// The command names (`create-user`, …) are the documented interface.
#[allow(clippy::enum_variant_names)]
#[derive(Subcommand)]
pub enum AdminCommand {
    /// Create an account; the password is read from a file (never from argv).
    CreateUser {
        #[arg(long)]
        username: String,
        /// File holding the password (its trailing newline is ignored); `-` reads standard input.
        #[arg(long)]
        password_file: PathBuf,
        /// Make the account an administrator.
        #[arg(long)]
        admin: bool,
    },
    /// Disable an account: its sessions and tokens stop working, everywhere
    /// by the time the command answers.
    DisableUser {
        #[arg(long)]
        username: String,
    },
    /// Enable a disabled account again.
    EnableUser {
        #[arg(long)]
        username: String,
    },
    /// Set an account's own word allowance per licence cycle (calendar
    /// months without a licence); `none` removes it.
    SetAllowance {
        #[arg(long)]
        username: String,
        /// Source words per cycle, or `none`.
        #[arg(long)]
        words: String,
    },
}

#[derive(Subcommand)]
pub enum ProviderCommand {
    /// Add a provider. Its key stays in the environment variable named here.
    Add {
        #[arg(long)]
        name: String,
        /// openai, openai_direct, openai_responses, anthropic or
        /// codex_chatgpt (spec 2.10).
        #[arg(long)]
        kind: ProviderKind,
        #[arg(long)]
        model: String,
        /// Required for `openai`; the other kinds default to their
        /// provider's own address.
        #[arg(long, default_value = "")]
        base_url: String,
        /// Name of the environment variable that holds the API key (for
        /// codex_chatgpt, the ChatGPT access token).
        #[arg(long, default_value = "")]
        api_key_env: String,
        /// Price per million prompt tokens.
        #[arg(long)]
        price_input: Option<f64>,
        /// Price per million completion tokens.
        #[arg(long)]
        price_output: Option<f64>,
        /// Price per million prompt tokens read from the provider's prompt
        /// cache (default: a share of the input price that depends on the
        /// kind).
        #[arg(long)]
        price_cached_input: Option<f64>,
        /// Concurrent calls the provider accepts from the whole installation.
        #[arg(long)]
        capacity: Option<i32>,
        /// Name of an existing, cheaper provider a job moves to near its
        /// budget.
        #[arg(long)]
        fallback: Option<String>,
        /// Share of the price taken off the calls sent by the provider's
        /// batch mode, at least 0 and below 1 (default 0.5: half price).
        #[arg(long)]
        batch_discount: Option<f64>,
        /// Make it the installation's default provider, used when a request,
        /// its volume and its series name none.
        #[arg(long)]
        default: bool,
    },
    /// Change a provider's settings.
    Edit {
        /// The provider's name.
        #[arg(long)]
        name: String,
        /// Share of the price taken off the calls sent by the provider's
        /// batch mode, at least 0 and below 1.
        #[arg(long)]
        batch_discount: f64,
    },
    /// List providers (never their keys).
    List,
}

/// The clients of a running server's public gRPC services: they need no
/// configuration of their own, only its address and an API token.
#[derive(Subcommand)]
pub enum ClientCommand {
    /// Translate a book on a running server: upload it, follow its progress,
    /// download the result.
    Translate(TranslateArgs),
    /// Show a translation request's status.
    Status(StatusArgs),
    /// Download a translation request's result.
    Result(ResultArgs),
}

/// Where the server is and how to speak to it.
#[derive(clap::Args)]
pub struct ServerArgs {
    /// The server's HTTP address (its public gRPC services answer there).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub server: String,
    /// Name of the environment variable holding the API token (the token
    /// itself is never an argument).
    #[arg(long, default_value = "DRAGOMAN_TOKEN")]
    pub token_env: String,
    /// Language of the server's messages, `en` or `fr` (default: from
    /// LC_ALL, LC_MESSAGES or LANG; the server answers in French otherwise).
    #[arg(long, value_parser = ["en", "fr"])]
    pub lang: Option<String>,
}

#[derive(clap::Args)]
pub struct TranslateArgs {
    /// An EPUB, TXT or DOCX file, or a JSON translation payload (spec 2.4).
    pub file: PathBuf,
    /// Target language (BCP 47 tag).
    #[arg(long)]
    pub to: String,
    /// Source language (default: what the book states, or the payload's).
    #[arg(long)]
    pub from: Option<String>,
    /// Where to write the result (default: next to FILE, named after it with
    /// the target language and the result's extension).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Result format: json, txt, txt-zip, epub or epub-bilingual (default:
    /// the request's own).
    #[arg(long)]
    pub format: Option<dragoman_model::vocab::ResultFormat>,
    /// Provider id (default: the volume's, the series' or the installation's).
    #[arg(long)]
    pub provider: Option<String>,
    /// fast, normal, high or maximum.
    #[arg(long)]
    pub quality: Option<dragoman_model::vocab::Quality>,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The request id.
    pub id: String,
    /// Print the whole status document as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(clap::Args)]
pub struct ResultArgs {
    /// The request id.
    pub id: String,
    /// json, txt, txt-zip, epub or epub-bilingual (default: the request's own).
    #[arg(long)]
    pub format: Option<dragoman_model::vocab::ResultFormat>,
    /// Where to write it (default: the server's file name, in the current
    /// folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Accept a result of a request that is not complete.
    #[arg(long)]
    pub partial: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

pub async fn open(config: &Config) -> Result<DatabaseConnection, Error> {
    let db = dragoman_model::db::connect(&config.database_url())
        .await
        .map_err(|source| Error::Open {
            what: "database".to_owned(),
            source,
        })?;
    Migrator::up(&db, None).await.map_err(Error::Migrations)?;
    Ok(db)
}

pub async fn migrate(config: &Config) -> Result<(), Error> {
    open(config).await?;
    println!("migrations applied to {}", redact(&config.database_url()));
    Ok(())
}

/// The database URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

pub fn describe(error: &dragoman_gateway::ApiError) -> String {
    let mut text =
        dragoman_gateway::messages::message(error.code, dragoman_gateway::messages::Lang::En, None);
    for issue in &error.issues {
        let field = issue
            .loc
            .last()
            .map(ToString::to_string)
            .unwrap_or_default();
        text.push_str(&format!(
            " {field}: {}",
            dragoman_gateway::messages::issue_message(
                issue.kind,
                dragoman_gateway::messages::Lang::En,
                issue.ctx.as_deref()
            )
        ));
    }
    if let Some(internal) = &error.internal {
        text.push_str(&format!(" ({internal})"));
    }
    text
}

/// A refused provider, with the fields at fault.
pub fn describe_pipeline(error: &dragoman_pipeline::PipelineError) -> String {
    match error {
        dragoman_pipeline::PipelineError::Invalid(issues) => {
            let fields: Vec<String> = issues
                .iter()
                .map(|issue| {
                    let field = issue
                        .loc
                        .last()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let expected = issue
                        .ctx
                        .as_ref()
                        .and_then(|c| c.expected.as_ref())
                        .map(|e| format!(" (expected one of: {e})"))
                        .unwrap_or_default();
                    format!("{field}: {}{expected}", issue.kind)
                })
                .collect();
            format!("invalid provider: {}", fields.join("; "))
        }
        other => other.to_string(),
    }
}

pub async fn admin(config: &Config, command: AdminCommand) -> Result<(), Error> {
    let db = open(config).await?;
    match command {
        AdminCommand::CreateUser {
            username,
            password_file,
            admin,
        } => {
            let raw = if password_file.as_os_str() == "-" {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(
                    |source| Error::Read {
                        what: "the password from standard input".to_owned(),
                        source,
                    },
                )?;
                text
            } else {
                std::fs::read_to_string(&password_file).map_err(|source| Error::Read {
                    what: password_file.display().to_string(),
                    source,
                })?
            };
            let password = raw
                .strip_suffix('\n')
                .map(|p| p.strip_suffix('\r').unwrap_or(p))
                .unwrap_or(&raw);
            let licence = config.licence_settings();
            let account =
                dragoman_gateway::identity::create_user(&db, &licence, &username, password, admin)
                    .await
                    .map_err(Error::Refused)?;
            println!(
                "created {} account `{}` ({})",
                if account.is_admin {
                    "administrator"
                } else {
                    "user"
                },
                account.username,
                account.id
            );
        }
        AdminCommand::DisableUser { username } => {
            dragoman_gateway::identity::set_active(
                &db,
                &config.licence_settings(),
                &username,
                false,
            )
            .await
            .map_err(Error::Refused)?;
            account_changed(config, true).await;
            println!("disabled account `{username}`");
        }
        AdminCommand::EnableUser { username } => {
            dragoman_gateway::identity::set_active(
                &db,
                &config.licence_settings(),
                &username,
                true,
            )
            .await
            .map_err(Error::Refused)?;
            account_changed(config, false).await;
            println!("enabled account `{username}`");
        }
        AdminCommand::SetAllowance { username, words } => {
            let allowance = parse_allowance(&words)?;
            dragoman_gateway::identity::set_allowance(&db, &username, allowance)
                .await
                .map_err(Error::Refused)?;
            account_changed(config, false).await;
            match allowance {
                Some(words) => println!("account `{username}` may add {words} words per cycle"),
                None => println!("account `{username}` has no word allowance of its own"),
            }
        }
    }
    Ok(())
}

/// An account changed behind the running servers' back: with Redis, every
/// server drops the account's authenticated tokens as soon as the notify
/// reaches it. A `restricting` change (an account disabled) then waits out
/// the servers' token cache, so that once the command has answered no
/// server still accepts the account's tokens, with Redis or without (the
/// in-process coordination of a single server cannot be reached from here).
/// The change is committed already: an announcement that cannot be made is
/// a warning, and the servers see the change within the cache's lifetime.
async fn account_changed(config: &Config, restricting: bool) {
    if let Some(url) = &config.redis_url {
        match RedisCoordination::connect(url, &config.redis_namespace).await {
            Ok(coordination) => announce_tokens_changed(&coordination).await,
            Err(e) => eprintln!(
                "warning: the change could not be announced through redis {}: {e}; \
                 servers see it within {} s",
                redact(url),
                TOKEN_CACHE_TTL.as_secs()
            ),
        }
    }
    if restricting {
        // A read that began just before the change may have been kept a
        // little after it: a second more covers it.
        tokio::time::sleep(TOKEN_CACHE_TTL + std::time::Duration::from_secs(1)).await;
    }
}

/// `none`, or a number of words from 0.
fn parse_allowance(text: &str) -> Result<Option<i64>, Error> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match text.parse::<i64>() {
        Ok(words) if words >= 0 => Ok(Some(words)),
        _ => Err(Error::Usage(format!(
            "--words must be a number of words from 0, or `none` (got `{text}`)"
        ))),
    }
}

pub async fn provider(config: &Config, command: ProviderCommand) -> Result<(), Error> {
    let db = open(config).await?;
    match command {
        ProviderCommand::Add {
            name,
            kind,
            model,
            base_url,
            api_key_env,
            price_input,
            price_output,
            price_cached_input,
            capacity,
            fallback,
            batch_discount,
            default,
        } => {
            let added = dragoman_pipeline::providers::add(
                &db,
                NewProvider {
                    name,
                    kind,
                    model,
                    base_url,
                    api_key_env,
                    price_input,
                    price_output,
                    price_cached_input,
                    capacity: capacity.map(i64::from),
                    fallback,
                    batch_discount,
                },
            )
            .await
            .map_err(Error::Provider)?;
            let id = added.provider.map(|p| p.id).unwrap_or_default();
            if default {
                dragoman_pipeline::providers::set_default(&db, Some(&id))
                    .await
                    .map_err(Error::Provider)?;
            }
            println!("added provider {id}");
        }
        ProviderCommand::Edit {
            name,
            batch_discount,
        } => {
            let changed =
                dragoman_pipeline::providers::set_batch_discount(&db, &name, batch_discount)
                    .await
                    .map_err(Error::Provider)?;
            let id = changed.provider.map(|p| p.id).unwrap_or_default();
            println!("provider {id}: batch discount {}", changed.batch_discount);
        }
        ProviderCommand::List => {
            for p in dragoman_pipeline::providers::list_admin(&db)
                .await
                .map_err(Error::Provider)?
            {
                if let Some(public) = p.provider {
                    println!(
                        "{}\t{}\t{}\t{}\tcapacity {}\tkey from ${}{}",
                        public.id,
                        public.name,
                        ProviderKind::from_wire(public.kind, "kind")
                            .map(ProviderKind::as_str)
                            .unwrap_or("unknown"),
                        public.model,
                        p.capacity,
                        p.api_key_env,
                        if p.is_default { "\tdefault" } else { "" }
                    );
                }
            }
        }
    }
    Ok(())
}

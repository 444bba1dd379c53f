//! The `dragoman` binary: command line, configuration and role wiring.
mod check_config;
mod client;
mod commands;
mod config;
mod demo;
mod demo_book;
mod demo_data;
mod error;
mod healthcheck;
mod serve;
mod shutdown;
mod telemetry;
mod term_commands;

use clap::{Parser, Subcommand};
use error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "dragoman",
    version,
    about = "Self-hosted whole-book translation with language models"
)]
struct Cli {
    /// TOML configuration file (also DRAGOMAN_CONFIG).
    #[arg(long, global = true, env = "DRAGOMAN_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: String,
    #[command(flatten)]
    config: dragoman_simulator::SimulatorConfig,
}

#[derive(clap::Args)]
struct InspectArgs {
    /// An EPUB, DOCX or TXT file.
    file: PathBuf,
    /// `headings` cuts a TXT or DOCX file at its chapter headings.
    #[arg(long, default_value = "none", value_parser = ["none", "headings"])]
    split: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service: every role on embedded defaults, or the roles asked for.
    Serve(serve::ServeArgs),
    /// Apply the database migrations and exit.
    Migrate,
    /// Translate a sample book end to end with the provider simulator, then keep
    /// serving; in a data folder of its own, never the configured installation.
    Demo(demo::DemoArgs),
    /// Run the provider simulator (OpenAI and Anthropic protocols) for tests and trials.
    SimulateProvider(SimulateArgs),
    /// Show how a book will be read: chapter map, passages and words, warnings.
    Inspect(InspectArgs),
    /// Accounts.
    #[command(subcommand)]
    Admin(commands::AdminCommand),
    /// Language-model providers.
    #[command(subcommand)]
    Provider(commands::ProviderCommand),
    /// Glossary terms decided by a person.
    #[command(subcommand)]
    Term(term_commands::TermCommand),
    /// Ask a running process whether it is healthy (exit 0 when it is): for
    /// container healthchecks and probes.
    Healthcheck(healthcheck::HealthcheckArgs),
    /// Validate the configuration from the environment without connecting to anything.
    CheckConfig(check_config::CheckConfigArgs),
    #[command(flatten)]
    Client(commands::ClientCommand),
}

fn inspect(args: &InspectArgs) -> Result<(), Error> {
    use dragoman_book::txt::Split;
    let bytes = std::fs::read(&args.file).map_err(|source| Error::Read {
        what: args.file.display().to_string(),
        source,
    })?;
    let name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let split = if args.split == "headings" {
        Split::Headings
    } else {
        Split::None
    };
    let report = dragoman_book::inspect::inspect(&name, &bytes, split).map_err(Error::Book)?;
    println!(
        "{}",
        if args.json {
            report.to_json()
        } else {
            report.to_text()
        }
    );
    Ok(())
}

async fn simulate(args: SimulateArgs) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|source| Error::Listen {
            what: "",
            address: args.listen.clone(),
            source,
        })?;
    let address = listener.local_addr().map_err(Error::LocalAddress)?;
    println!("dragoman: simulator listening on http://{address}");
    dragoman_simulator::serve(listener, args.config, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(Error::Simulator)
}

/// The service name of the traces of `serve` and `demo` (see
/// [`telemetry::traces`]); the other commands export none.
fn traced_service(cli: &Cli) -> Option<String> {
    let config = config::Config::load(cli.config.as_deref()).ok()?;
    let roles = match &cli.command {
        Command::Serve(args) => args.roles.clone().unwrap_or_else(|| config.roles.clone()),
        Command::Demo(_) => "all".to_owned(),
        _ => return None,
    };
    telemetry::traces::service_name(&config, &roles)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The clients of a running server read no configuration: a broken
    // `DRAGOMAN_*` variable of the machine must not stop them.
    let cli = match cli.command {
        Command::Client(command) => return client::main(command),
        command => Cli {
            config: cli.config,
            command,
        },
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tracing = match telemetry::traces::init(traced_service(&cli).as_deref(), runtime.handle()) {
        Ok(tracing) => tracing,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let mut config = config::Config::load(cli.config.as_deref())?;
        match cli.command {
            Command::Serve(args) => serve::run(&mut config, args).await,
            Command::Migrate => commands::migrate(&config).await,
            Command::Demo(args) => demo::run(&config, args).await,
            Command::SimulateProvider(args) => simulate(args).await,
            Command::Inspect(args) => inspect(&args),
            Command::Admin(command) => commands::admin(&config, command).await,
            Command::Provider(command) => commands::provider(&config, command).await,
            Command::Term(command) => term_commands::term(&config, command).await,
            Command::Healthcheck(args) => healthcheck::run(&config, &args).await,
            Command::CheckConfig(args) => check_config::run(&config, &args),
            // Answered before the configuration is read.
            Command::Client(_) => Ok(()),
        }
    });
    tracing.shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

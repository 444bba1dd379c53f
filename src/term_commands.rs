//! `dragoman term`: a person's glossary decisions from the command line,
//! through the memory service's own operations (the same checks and
//! precedence as its gRPC callers).

use crate::config::Config;
use crate::error::Error;
use clap::{Args, Subcommand};
use dragoman_memory::{MemoryService, MemorySettings};
use dragoman_model::vocab::TermLayer;
use dragoman_proto::Memory;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::{ProjectRef, PutTermRequest, Term};
use dragoman_proto::wire::WireEnum;

#[derive(Subcommand)]
pub enum TermCommand {
    /// Add or change a term decided by a person (origin `human`).
    Add(AddTerm),
    /// The terms in force for a volume, after precedence (spec 2.9).
    List {
        /// The volume (project id).
        #[arg(long)]
        volume: String,
    },
}

/// Where the term belongs: exactly one of the three.
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct Owner {
    /// A volume's deliberate override.
    #[arg(long)]
    volume: Option<String>,
    /// A decision for the whole series.
    #[arg(long)]
    series: Option<String>,
    /// A shared glossary.
    #[arg(long)]
    glossary: Option<String>,
}

#[derive(Args)]
pub struct AddTerm {
    #[command(flatten)]
    owner: Owner,
    #[arg(long)]
    source: String,
    #[arg(long)]
    translation: String,
    #[arg(long, default_value = "")]
    category: String,
    #[arg(long, default_value = "")]
    description: String,
    /// Enforced and checked in every passage.
    #[arg(long)]
    locked: bool,
    /// Keep it as a proposal: not applied until accepted.
    #[arg(long)]
    proposal: bool,
}

/// The memory role's refusal, as the gateway would answer it.
fn refused(status: tonic::Status) -> Error {
    Error::Refused(dragoman_gateway::ApiError::from(status))
}

fn print(term: &Term) {
    let layer = TermLayer::from_wire(term.layer, "layer")
        .map(TermLayer::as_str)
        .unwrap_or("?");
    println!(
        "{}\t{layer}\t{}\t{} => {}{}{}",
        term.id,
        term.owner_id,
        term.source,
        term.translation,
        if term.locked { "\tlocked" } else { "" },
        if term.accepted { "" } else { "\tproposal" },
    );
}

pub async fn term(config: &Config, command: TermCommand) -> Result<(), Error> {
    let db = crate::commands::open(config).await?;
    // The command is the installation itself: a credential of its own.
    let credential = InternalCredential::new(dragoman_model::ids::new_id());
    let memory = MemoryService::internal(
        db,
        credential.clone(),
        MemorySettings {
            context_tokens: config.context_tokens,
        },
    );
    match command {
        TermCommand::Add(add) => {
            let (layer, owner_id) = match (add.owner.volume, add.owner.series, add.owner.glossary) {
                (Some(id), _, _) => (TermLayer::Book, id),
                (_, Some(id), _) => (TermLayer::Series, id),
                (_, _, Some(id)) => (TermLayer::Shared, id),
                (None, None, None) => {
                    return Err(Error::Usage(
                        "a volume, series or glossary is needed".into(),
                    ));
                }
            };
            let term = memory
                .put_term(credential.system_request(PutTermRequest {
                    layer: layer.to_wire(),
                    owner_id,
                    source: add.source,
                    translation: add.translation,
                    category: add.category,
                    description: add.description,
                    locked: add.locked,
                    accepted: !add.proposal,
                }))
                .await
                .map_err(refused)?
                .into_inner();
            print(&term);
        }
        TermCommand::List { volume } => {
            let terms = memory
                .terms_in_force(credential.system_request(ProjectRef { project_id: volume }))
                .await
                .map_err(refused)?
                .into_inner();
            for term in &terms.terms {
                print(term);
            }
        }
    }
    Ok(())
}

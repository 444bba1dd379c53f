//! The operations both surfaces share: the REST routes and the tool
//! protocol call the same functions, which check the caller's scope, call
//! the owning service as the caller, map its refusal to an [`ApiError`] and
//! build the JSON shapes of spec 2.x. Routes and tools only extract their
//! arguments and shape the answer for their transport.
//!
//! The scope an operation needs depends on the surface (spec 5: each REST
//! route has its own scope; the tools need the library scopes, spec 4.10),
//! so every operation states both in a [`Needs`] and the [`Caller`] knows
//! which surface it came through.

pub mod books;
pub mod glossaries;
pub mod jobs;
pub mod narrative;
pub mod providers;
pub mod requests;
pub mod series;
pub mod terms;

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::entities::account;
use dragoman_model::vocab::Scope;
use dragoman_proto::principal::Principal;
use dragoman_proto::wire::WireEnum;
use std::future::Future;

/// How a caller reaches an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// The automation API under `/api/v1`.
    Rest,
    /// The tool protocol at `/mcp`.
    Tools,
    /// The public gRPC services (`dragoman.api.v1`): the REST scopes.
    Grpc,
    /// The web console at `/`, on a person's session.
    Console,
}

/// The scope an operation needs on each surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    pub rest: Scope,
    pub tools: Scope,
}

impl Needs {
    /// The same scope on both surfaces.
    pub const fn both(scope: Scope) -> Needs {
        Needs {
            rest: scope,
            tools: scope,
        }
    }

    /// A reading operation: `scope` on REST, `library:read` for tools.
    pub const fn read(scope: Scope) -> Needs {
        Needs {
            rest: scope,
            tools: Scope::LibraryRead,
        }
    }
}

/// Who calls an operation: a token, or a person signed in to the console.
/// Both are boxed: they are rows of several hundred bytes, and a caller is
/// moved into every operation's future.
#[derive(Debug, Clone)]
pub enum Who {
    Token(Box<TokenCaller>),
    /// A person acts on their own account with all its rights: scopes
    /// narrow what a token they created may do, not what they may do.
    Person(Box<account::Model>),
}

/// An authenticated caller and the surface it called through.
#[derive(Debug, Clone)]
pub struct Caller {
    pub who: Who,
    pub surface: Surface,
}

impl Caller {
    pub fn rest(token: TokenCaller) -> Caller {
        Caller {
            who: Who::Token(Box::new(token)),
            surface: Surface::Rest,
        }
    }

    pub fn tools(token: TokenCaller) -> Caller {
        Caller {
            who: Who::Token(Box::new(token)),
            surface: Surface::Tools,
        }
    }

    pub fn grpc(token: TokenCaller) -> Caller {
        Caller {
            who: Who::Token(Box::new(token)),
            surface: Surface::Grpc,
        }
    }

    /// A person signed in to the console.
    pub fn console(account: account::Model) -> Caller {
        Caller {
            who: Who::Person(Box::new(account)),
            surface: Surface::Console,
        }
    }

    /// The account the caller acts for.
    pub fn account(&self) -> &account::Model {
        match &self.who {
            Who::Token(token) => &token.account,
            Who::Person(account) => account,
        }
    }

    /// 403 `insufficient_scope` naming the scope this surface needs.
    pub fn require(&self, needs: Needs) -> ApiResult<()> {
        let Who::Token(token) = &self.who else {
            return Ok(());
        };
        token.require(match self.surface {
            Surface::Rest | Surface::Grpc | Surface::Console => needs.rest,
            Surface::Tools => needs.tools,
        })
    }

    pub fn principal(&self) -> Principal {
        match &self.who {
            Who::Token(token) => token.principal(),
            Who::Person(account) => Principal {
                account_id: account.id.clone(),
                token_id: None,
                admin: account.is_admin,
            },
        }
    }

    /// Checks `needs`, then sends `message` through `rpc` acting for this
    /// caller; a service's refusal becomes its [`ApiError`].
    pub async fn call<M, R, F, Fut>(
        &self,
        state: &AppState,
        needs: Needs,
        message: M,
        rpc: F,
    ) -> ApiResult<R>
    where
        F: FnOnce(tonic::Request<M>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        self.require(needs)?;
        let answer = rpc(state.call(&self.principal(), message))
            .await
            .map_err(|status| self.located(ApiError::from(status)))?;
        Ok(answer.into_inner())
    }

    /// A service locates its issues in its message's body; a tool caller
    /// put the values in its arguments, so its issues are located there.
    pub fn located(&self, mut error: ApiError) -> ApiError {
        if self.surface == Surface::Tools {
            for issue in &mut error.issues {
                if let Some(root) = issue.loc.first_mut()
                    && root.as_str() == Some("body")
                {
                    *root = dragoman_model::vocab::LocPart::from("arguments");
                }
            }
        }
        error
    }
}

/// A vocabulary value a service answered as a proto number.
pub(crate) fn from_wire<T: WireEnum>(value: i32, field: &'static str) -> ApiResult<T> {
    T::from_wire(value, field).map_err(ApiError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ErrorCode;
    use serde_json::json;

    #[test]
    fn tool_callers_find_service_issues_under_their_arguments() {
        use dragoman_model::vocab::{Issue, IssueKind};
        let error = ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![Issue::at(
            "body",
            "threads",
            IssueKind::OutOfRange,
        )]);
        let token = crate::auth::bearer::test_caller("t", &[Scope::LibraryWrite]);
        let moved = Caller::tools(token.clone()).located(error.clone());
        assert_eq!(
            moved.issues[0].loc,
            vec![json!("arguments"), json!("threads")]
        );
        let kept = Caller::rest(token.clone()).located(error.clone());
        assert_eq!(kept.issues[0].loc, vec![json!("body"), json!("threads")]);
        let kept = Caller::grpc(token).located(error);
        assert_eq!(kept.issues[0].loc, vec![json!("body"), json!("threads")]);
    }

    #[test]
    fn each_surface_checks_its_own_scope() {
        let needs = Needs::read(Scope::SeriesRead);
        let rest_only = crate::auth::bearer::test_caller("t", &[Scope::SeriesRead]);
        assert!(Caller::rest(rest_only.clone()).require(needs).is_ok());
        let refused = Caller::tools(rest_only).require(needs).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InsufficientScope);
        assert_eq!(refused.extra.get("scope"), Some(&json!("library:read")));

        let tools_only = crate::auth::bearer::test_caller("t", &[Scope::LibraryRead]);
        assert!(Caller::tools(tools_only.clone()).require(needs).is_ok());
        let refused = Caller::rest(tools_only.clone()).require(needs).unwrap_err();
        assert_eq!(refused.extra.get("scope"), Some(&json!("series:read")));
        let refused = Caller::grpc(tools_only).require(needs).unwrap_err();
        assert_eq!(refused.extra.get("scope"), Some(&json!("series:read")));
    }
}

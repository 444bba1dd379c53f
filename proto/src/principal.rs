//! Who is acting, carried in gRPC metadata.
//!
//! The gateway authenticates people and tokens; the services behind it trust
//! the principal it forwards only when the call also carries the internal
//! credential shared by the processes of one installation. Local (in-process)
//! calls go through the very same check so both paths behave alike.

use subtle::ConstantTimeEq;
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

const CREDENTIAL: &str = "x-dragoman-internal";
const ACCOUNT: &str = "x-dragoman-account";
const TOKEN: &str = "x-dragoman-token";
const ADMIN: &str = "x-dragoman-admin";

/// The account a call acts for, and the token it used if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub account_id: String,
    pub token_id: Option<String>,
    pub admin: bool,
}

impl Principal {
    /// The principal as the tenancy rule sees it.
    pub fn acting(&self) -> dragoman_model::tenancy::Acting<'_> {
        dragoman_model::tenancy::Acting::new(&self.account_id, self.admin)
    }
}

/// The secret that proves a call comes from a process of this installation.
#[derive(Clone)]
pub struct InternalCredential(String);

impl std::fmt::Debug for InternalCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InternalCredential(…)")
    }
}

impl InternalCredential {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Wraps `message` in a request that acts for `principal`.
    pub fn request<T>(&self, principal: &Principal, message: T) -> Request<T> {
        let mut request = Request::new(message);
        self.attach(principal, &mut request);
        request
    }

    /// Wraps `message` in a request made by the installation itself (health
    /// checks), acting for no account.
    pub fn system_request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Ok(value) = MetadataValue::try_from(self.0.as_str()) {
            request.metadata_mut().insert(CREDENTIAL, value);
        }
        request
    }

    fn attach<T>(&self, principal: &Principal, request: &mut Request<T>) {
        let metadata = request.metadata_mut();
        // Ids and the credential are ASCII, so these conversions cannot fail
        // for values this crate produced; a failure just leaves the key out and
        // the callee refuses the call.
        if let Ok(value) = MetadataValue::try_from(self.0.as_str()) {
            metadata.insert(CREDENTIAL, value);
        }
        if let Ok(value) = MetadataValue::try_from(principal.account_id.as_str()) {
            metadata.insert(ACCOUNT, value);
        }
        if let Some(token) = &principal.token_id
            && let Ok(value) = MetadataValue::try_from(token.as_str())
        {
            metadata.insert(TOKEN, value);
        }
        if principal.admin {
            metadata.insert(ADMIN, MetadataValue::from_static("1"));
        }
    }

    /// Checks that the call comes from this installation.
    pub fn verify<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let presented = request
            .metadata()
            .get(CREDENTIAL)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if presented.as_bytes().ct_eq(self.0.as_bytes()).into() {
            Ok(())
        } else {
            Err(Status::unauthenticated(
                "missing or invalid internal credential",
            ))
        }
    }

    /// Checks the credential and returns the principal the call acts for.
    pub fn principal<T>(&self, request: &Request<T>) -> Result<Principal, Status> {
        self.verify(request)?;
        let metadata = request.metadata();
        let text = |key: &str| {
            metadata
                .get(key)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let account_id =
            text(ACCOUNT).ok_or_else(|| Status::unauthenticated("no principal in the call"))?;
        Ok(Principal {
            account_id,
            token_id: text(TOKEN),
            admin: text(ADMIN).as_deref() == Some("1"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_round_trips_with_the_right_credential() {
        let cred = InternalCredential::new("secret");
        let who = Principal {
            account_id: "a1".into(),
            token_id: Some("t1".into()),
            admin: true,
        };
        let req = cred.request(&who, ());
        assert_eq!(cred.principal(&req).ok(), Some(who));
    }

    #[test]
    fn another_credential_is_refused() {
        let who = Principal {
            account_id: "a1".into(),
            token_id: None,
            admin: false,
        };
        let req = InternalCredential::new("secret").request(&who, ());
        let err = InternalCredential::new("other").principal(&req).err();
        assert_eq!(err.map(|s| s.code()), Some(tonic::Code::Unauthenticated));
    }

    #[test]
    fn system_request_has_no_principal_but_verifies() {
        let cred = InternalCredential::new("secret");
        let req = cred.system_request(());
        assert!(cred.verify(&req).is_ok());
        assert!(cred.principal(&req).is_err());
    }
}

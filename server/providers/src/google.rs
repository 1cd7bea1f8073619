//! Google's Application Default Credentials for Vertex AI, with Google's own `google-cloud-auth`:
//! `GOOGLE_APPLICATION_CREDENTIALS` (a service account key, an authorized user, an external
//! account for workload identity federation, an impersonated service account), else gcloud's
//! `application_default_credentials.json` (`gcloud auth application-default login`), else the
//! metadata server of the Google Cloud machine Tandem runs on. Tokens are for the
//! `cloud-platform` scope, cached and refreshed by the library before they expire.
//!
//! A service account key signs its own token (a JWT with the scope, which Google's APIs accept
//! as an access token, as Google's own client libraries do): no token request is made for it.

use google_cloud_auth::credentials::{AccessTokenCredentials, Builder};

use crate::error::{ProviderError, Result};
use crate::sse::error_chain;

/// The scope Vertex AI's API asks for.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// What a missing credential asks the user to do.
const SET_UP: &str = "run `gcloud auth application-default login`, or set \
    GOOGLE_APPLICATION_CREDENTIALS to a credentials file (a service account key), in the \
    environment Tandem runs in";

/// The credentials, found at the first request (finding them may read files and, off Google
/// Cloud, ask a metadata server that is not there) and shared from then on.
#[derive(Default)]
pub(crate) struct Tokens {
    credentials: tokio::sync::OnceCell<AccessTokenCredentials>,
}

impl Tokens {
    /// A current access token.
    pub(crate) async fn token(&self) -> Result<String> {
        let credentials = self
            .credentials
            .get_or_try_init(|| async {
                Builder::default()
                    .with_scopes([SCOPE])
                    .build_access_token_credentials()
                    .map_err(|error| {
                        let why = error_chain(&error);
                        if error.is_loading() {
                            ProviderError::NotSetUp {
                                message: format!(
                                    "no Google credentials could be read for Vertex AI ({why}): \
                                     {SET_UP}"
                                ),
                            }
                        } else {
                            ProviderError::Config {
                                message: format!(
                                    "the Google credentials for Vertex AI cannot be used: {why}"
                                ),
                            }
                        }
                    })
            })
            .await?;
        let token = credentials.access_token().await.map_err(|error| {
            let why = error_chain(&error);
            if !has_credentials_file() {
                // Off Google Cloud the metadata server, the last place looked, is not there:
                // retrying would not make credentials appear.
                return ProviderError::NotSetUp {
                    message: format!(
                        "no Google credentials were found for Vertex AI (no credentials file, \
                         and the metadata server gave no token: {why}): {SET_UP}"
                    ),
                };
            }
            let message = format!("no Google access token for Vertex AI: {why}");
            if error.is_transient() {
                ProviderError::Network { message }
            } else {
                ProviderError::Authentication { message }
            }
        })?;
        Ok(token.token)
    }
}

/// Whether Application Default Credentials come from a file (`GOOGLE_APPLICATION_CREDENTIALS`,
/// or gcloud's in its configuration folder) rather than from the metadata server.
fn has_credentials_file() -> bool {
    if std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS").is_some() {
        return true;
    }
    let root = if cfg!(windows) {
        std::env::var_os("APPDATA").map(std::path::PathBuf::from)
    } else {
        std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".config"))
    };
    root.is_some_and(|root| {
        root.join("gcloud/application_default_credentials.json")
            .exists()
    })
}

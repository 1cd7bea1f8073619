//! AWS credentials and SigV4 signing for Bedrock, with the AWS SDK's own crates: credentials
//! from its default chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`,
//! `AWS_PROFILE` and `~/.aws/credentials` and `config` with their SSO, role and process
//! settings, web identity, ECS, IMDS), cached across requests until shortly before they
//! expire; signatures from `aws-sigv4`, over the exact bytes sent. The region a model's settings
//! do not give is found as the SDK finds it, less IMDS (it is needed before the first request):
//! `AWS_REGION`, `AWS_DEFAULT_REGION`, then the profile's `region`.
//!
//! No credential leaves this module but in the signed headers: errors name where credentials
//! were looked for, never what they are, and `sign` returns what it added so that an error
//! quoting it can be scrubbed (`http.rs`).

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use aws_config::default_provider::credentials::DefaultCredentialsChain;
use aws_config::provider_config::ProviderConfig;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use aws_types::os_shim_internal::{Env, Fs};
use aws_types::region::Region;
use reqwest::header::{HeaderName, HeaderValue};
use tracing::instrument::WithSubscriber;

use crate::error::{ProviderError, Result};
use crate::sse::error_chain;

/// The service name Bedrock's runtime signs under.
const SERVICE: &str = "bedrock";

/// Credentials are fetched again this long before they expire, so that no request is signed
/// with credentials that expire on the way.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// How long credentials that state no expiry are used before the chain is asked again (what
/// the SDK's own cache does): a profile file edited meanwhile is then read.
const UNSTATED_EXPIRY: Duration = Duration::from_secs(15 * 60);

/// What a missing credential asks the user to do.
const SET_UP: &str = "set AWS_PROFILE to a profile in ~/.aws/config (after `aws sso login` for \
    an SSO profile), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), in \
    the environment Tandem runs in; or AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key";

/// Signs requests for one region with the chain's credentials, fetched once and shared by every
/// request (and clone of the model) until they near their expiry.
pub(crate) struct Signer {
    region: String,
    chain: tokio::sync::OnceCell<SharedCredentialsProvider>,
    cached: tokio::sync::Mutex<Option<(Credentials, SystemTime)>>,
}

impl Signer {
    pub(crate) fn new(region: String) -> Signer {
        Signer {
            region,
            chain: tokio::sync::OnceCell::new(),
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// Signs `request` (its body final) for Bedrock: adds `x-amz-date`, `authorization` and,
    /// with temporary credentials, `x-amz-security-token`. Returns the credentials' parts that
    /// the request now carries, for scrubbing.
    pub(crate) async fn sign(&self, request: &mut reqwest::Request) -> Result<Vec<String>> {
        let credentials = self.credentials().await?;
        let secrets: Vec<String> = std::iter::once(credentials.access_key_id())
            .chain(credentials.session_token())
            .map(str::to_owned)
            .collect();
        let identity = Identity::from(credentials);
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SERVICE)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|error| signing_failed(&error))?
            .into();
        let headers: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .collect();
        let body = request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .unwrap_or_default();
        let signable = SignableRequest::new(
            request.method().as_str(),
            request.url().as_str(),
            headers.into_iter(),
            SignableBody::Bytes(body),
        )
        .map_err(|error| signing_failed(&error))?;
        // The signer traces the canonical request, session token included: nothing of it may
        // reach Tandem's log, whatever level the user asks for.
        let signed =
            tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
                sign(signable, &params)
            });
        let (instructions, _) = signed.map_err(|error| signing_failed(&error))?.into_parts();
        let (headers, _) = instructions.into_parts();
        for header in headers {
            let mut value =
                HeaderValue::from_str(header.value()).map_err(|error| signing_failed(&error))?;
            value.set_sensitive(header.sensitive() || header.name() == "authorization");
            let name = HeaderName::from_bytes(header.name().as_bytes())
                .map_err(|error| signing_failed(&error))?;
            request.headers_mut().insert(name, value);
        }
        Ok(secrets)
    }

    /// The cached credentials, or the chain's when there are none or they near their expiry.
    async fn credentials(&self) -> Result<Credentials> {
        let mut cached = self.cached.lock().await;
        let now = SystemTime::now();
        if let Some((credentials, refresh_at)) = cached.as_ref() {
            if now < *refresh_at {
                return Ok(credentials.clone());
            }
        }
        let chain = self
            .chain
            .get_or_init(|| async {
                let config = ProviderConfig::default()
                    .with_http_client(
                        aws_smithy_http_client::Builder::new()
                            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                            ))
                            .build_https(),
                    )
                    .with_region(Some(Region::new(self.region.clone())));
                let chain = DefaultCredentialsChain::builder()
                    .configure(config)
                    .build()
                    .await;
                SharedCredentialsProvider::new(chain)
            })
            .await;
        // The chain's HTTP calls (STS, SSO, IMDS) may trace what they receive, credentials
        // included; their failures come back as the error, so nothing is lost by not logging.
        let credentials = chain
            .provide_credentials()
            .with_subscriber(tracing::subscriber::NoSubscriber::default())
            .await
            .map_err(|error| credentials_error(&error))?;
        let refresh_at = match credentials.expiry() {
            Some(expiry) => expiry.checked_sub(REFRESH_BEFORE_EXPIRY).unwrap_or(expiry),
            None => now + UNSTATED_EXPIRY,
        };
        *cached = Some((credentials.clone(), refresh_at));
        Ok(credentials)
    }
}

fn signing_failed(error: &(dyn std::error::Error + 'static)) -> ProviderError {
    ProviderError::Config {
        message: format!(
            "the Bedrock request could not be signed: {}",
            error_chain(error)
        ),
    }
}

/// The typed error for credentials the chain could not give: none found is a setup to do, a
/// timeout or a provider's failure may pass, a broken profile is the configuration's.
fn credentials_error(error: &CredentialsError) -> ProviderError {
    let why = error_chain(error);
    match error {
        CredentialsError::CredentialsNotLoaded(_) => ProviderError::NotSetUp {
            message: format!("no AWS credentials were found for Bedrock ({why}): {SET_UP}"),
        },
        CredentialsError::InvalidConfiguration(_) => ProviderError::Config {
            message: format!("the AWS credentials for Bedrock are misconfigured: {why}"),
        },
        CredentialsError::ProviderTimedOut(_) => ProviderError::Network {
            message: format!("the AWS credentials for Bedrock did not arrive in time: {why}"),
        },
        // An SSO session that expired, a role that may not be assumed, a credential process
        // that failed: the user has to act.
        CredentialsError::ProviderError(_) => ProviderError::Authentication {
            message: format!("the AWS credentials for Bedrock could not be had: {why}"),
        },
        _ => ProviderError::Network {
            message: format!("the AWS credentials for Bedrock could not be had: {why}"),
        },
    }
}

/// The region Bedrock is called in: `setting` (the model's `region`), else `AWS_REGION`,
/// `AWS_DEFAULT_REGION`, then the AWS profile's `region` (`profile_region`).
pub(crate) fn region(
    setting: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    setting
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .map(|region| region.trim().to_owned())
        .filter(|region| !region.is_empty())
        .or_else(|| profile_region(env))
}

/// The region of the profile in use (`AWS_PROFILE`, else `default`) in the AWS config files
/// (`AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`, else under `~/.aws`), with `env` for the
/// variables that find them. `None` when nothing says.
pub(crate) fn profile_region(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let names = [
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_PROFILE",
        "HOME",
        "USERPROFILE",
        "HOMEDRIVE",
        "HOMEPATH",
    ];
    let vars: HashMap<String, String> = names
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), env(name)?)))
        .collect();
    // The profile files are read with `std::fs` behind an async signature, so this completes
    // at once on any thread, inside a runtime or not.
    let profiles = futures::executor::block_on(aws_config::profile::load(
        &Fs::real(),
        &Env::from(vars),
        // The standard files (the type's name moved between releases; its default did not).
        &Default::default(),
        None,
    ))
    .ok()?;
    profiles
        .get("region")
        .map(str::trim)
        .filter(|region| !region.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_region_is_read_from_the_files_the_environment_names() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[default]\nregion = eu-west-1\n\n[profile work]\nregion = ap-southeast-2\n",
        )
        .unwrap();
        let config = config.display().to_string();
        let missing = dir.path().join("none").display().to_string();
        let env = |profile: Option<&'static str>| {
            let config = config.clone();
            let missing = missing.clone();
            move |name: &str| match name {
                "AWS_CONFIG_FILE" => Some(config.clone()),
                "AWS_SHARED_CREDENTIALS_FILE" => Some(missing.clone()),
                "AWS_PROFILE" => profile.map(str::to_owned),
                _ => None,
            }
        };
        assert_eq!(profile_region(&env(None)).as_deref(), Some("eu-west-1"));
        assert_eq!(
            profile_region(&env(Some("work"))).as_deref(),
            Some("ap-southeast-2")
        );
        assert_eq!(profile_region(&env(Some("nobody"))), None);
        let nothing = |name: &str| (name == "AWS_CONFIG_FILE").then(|| missing.clone());
        assert_eq!(profile_region(&nothing), None);
    }
}

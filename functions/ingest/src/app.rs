//! The function's state and its handling of one request.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::presigning::PresigningConfig;
use lambda_http::{Body, Request};
use proflake::receive::{DirectUpload, Receiver};
use proflake::store::ObjectStore;
use proflake::store::S3Store;
use proflake_lambda::{emf_documents, print_documents, MetricsTarget, Tally};

use crate::config::{Auth, Config, TokenSource};
use crate::tally::{refusal_reason, RequestTally};

/// A response as the receiver gives it: status, headers and the whole body.
type Response = lambda_http::http::Response<Vec<u8>>;

/// What the function keeps between requests: the receiver with its token, the uploads bucket,
/// and the S3 client that presigns upload URLs.
pub struct App {
    receiver: Receiver,
    uploads: Arc<dyn ObjectStore>,
    s3: aws_sdk_s3::Client,
    bucket: String,
    upload_url_seconds: u64,
    metrics_namespace: String,
    function_name: String,
}

impl App {
    /// The function's state from its settings: the token read from its SSM parameter (once,
    /// at cold start), the uploads bucket through S3. Must run inside the Tokio runtime.
    pub async fn from_env(config: Config) -> Result<App, String> {
        let shared = proflake_lambda::aws_config_from_env().await;
        let s3 = proflake_lambda::s3_client(&shared);
        let token = match &config.auth {
            Auth::Iam => None,
            Auth::Token(TokenSource::Value(token)) => Some(token.clone()),
            Auth::Token(TokenSource::Parameter(name)) => {
                Some(read_parameter(&aws_sdk_ssm::Client::new(&shared), name).await?)
            }
        };
        let uploads = Arc::new(S3Store::new(
            s3.clone(),
            &config.uploads_bucket,
            tokio::runtime::Handle::current(),
        ));
        Ok(App::new(&config, s3, token.as_deref(), uploads))
    }

    /// The function's state with the store and token given (tests give a local directory).
    pub fn new(
        config: &Config,
        s3: aws_sdk_s3::Client,
        token: Option<&str>,
        uploads: Arc<dyn ObjectStore>,
    ) -> App {
        App {
            receiver: Receiver::new(token, config.common.limits.clone()),
            uploads,
            s3,
            bucket: config.uploads_bucket.clone(),
            upload_url_seconds: config.upload_url_seconds,
            metrics_namespace: config.common.metrics_namespace.clone(),
            function_name: config.common.function_name.clone(),
        }
    }

    /// Answers one request, logs it and prints its metrics.
    pub async fn handle(self: &Arc<Self>, request: Request) -> lambda_http::Response<Body> {
        let started = Instant::now();
        let (head, body) = request.into_parts();
        let mut tally = RequestTally {
            requests: 1,
            bytes: body.len() as u64,
            ..RequestTally::default()
        };
        let app = Arc::clone(self);
        // Reading checks the profile and storing blocks on S3: both off the runtime's threads.
        let outcome = tokio::task::spawn_blocking(move || app.receive(&head, &body)).await;
        let response = match outcome {
            Ok(Handled::Answered { response, uploads }) => {
                tally.uploads = uploads;
                response
            }
            Ok(Handled::Presign(direct)) => {
                let response = self.presign(&direct).await;
                tally.upload_urls = u64::from(response.status().is_success());
                response
            }
            Err(e) => {
                tracing::error!(error = %e, "the request's handler failed");
                let mut response = Response::new(Vec::new());
                *response.status_mut() = lambda_http::http::StatusCode::INTERNAL_SERVER_ERROR;
                response
            }
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            tally.fail(&refusal_reason(status));
        }
        let duration_ms = started.elapsed().as_millis() as u64;
        tally.log_batch(duration_ms);
        let target = MetricsTarget {
            namespace: &self.metrics_namespace,
            function_name: &self.function_name,
        };
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        print_documents(&emf_documents(target, &tally, duration_ms, now_ms));
        response.map(Body::from)
    }

    fn receive(&self, head: &lambda_http::http::request::Parts, body: &[u8]) -> Handled {
        let accepted = match self.receiver.read(head, body) {
            Ok(accepted) => accepted,
            Err(refused) => {
                return Handled::Answered {
                    response: *refused,
                    uploads: 0,
                }
            }
        };
        if let Some(direct) = accepted.direct_upload() {
            return Handled::Presign(direct.clone());
        }
        let stored = self.receiver.store(self.uploads.as_ref(), head, &accepted);
        for key in &stored.keys {
            tracing::info!(key = %key, protocol = accepted.protocol().name(), "stored");
        }
        Handled::Answered {
            uploads: stored.keys.len() as u64,
            response: stored.response,
        }
    }

    /// The presigned PUT of a direct upload, its object metadata signed with it.
    async fn presign(&self, direct: &DirectUpload) -> Response {
        let expires_in = Duration::from_secs(self.upload_url_seconds);
        let mut put = self.s3.put_object().bucket(&self.bucket).key(&direct.key);
        for (name, value) in &direct.metadata {
            put = put.metadata(name, value);
        }
        let presigned = match PresigningConfig::expires_in(expires_in) {
            Ok(config) => put.presigned(config).await,
            Err(e) => {
                tracing::error!(error = %e, "the presigning configuration is invalid");
                return server_error();
            }
        };
        match presigned {
            Ok(request) => {
                tracing::info!(key = %direct.key, "upload URL handed out");
                direct.reply(request.uri(), self.upload_url_seconds)
            }
            Err(e) => {
                tracing::error!(error = ?e, "presigning failed");
                server_error()
            }
        }
    }
}

/// What reading and storing a request came to.
enum Handled {
    /// The answer, and how many uploads were written.
    Answered { response: Response, uploads: u64 },
    /// A direct upload to presign.
    Presign(DirectUpload),
}

fn server_error() -> Response {
    let mut response = Response::new(br#"{"error":"the upload URL could not be made"}"#.to_vec());
    *response.status_mut() = lambda_http::http::StatusCode::INTERNAL_SERVER_ERROR;
    response
}

/// The token in the SSM SecureString parameter `name`.
async fn read_parameter(ssm: &aws_sdk_ssm::Client, name: &str) -> Result<String, String> {
    let output = ssm
        .get_parameter()
        .name(name)
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| format!("cannot read the token parameter {name}: {e}"))?;
    let token = output
        .parameter()
        .and_then(|p| p.value())
        .map(str::trim)
        .unwrap_or_default();
    if token.is_empty() {
        return Err(format!("the token parameter {name} is empty"));
    }
    Ok(token.to_string())
}

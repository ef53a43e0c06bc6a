//! TLS for tokio-postgres on rustls (ring): the same client configuration
//! the other backends build from [`coord_core::TlsOptions`]
//! (`coord_core::backend::tls_probe::client_config`). PostgreSQL asks for
//! TLS inside its own protocol (an `SSLRequest` first), which tokio-postgres
//! does; this module only wraps the stream.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use coord_core::backend::tls_probe::client_config;
use coord_core::{Error, Result, TlsOptions};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::TlsConnector;

/// What every connection of a session is made with: TLS with a config, or
/// none (the URL's `sslmode=disable`, or no TLS asked for; tokio-postgres
/// then never calls it).
#[derive(Clone)]
pub(crate) struct MakeTls {
    config: Option<Arc<ClientConfig>>,
    server_name: Option<String>,
}

impl MakeTls {
    /// Read the files of `tls` (if any) and make the rustls config.
    ///
    /// # Errors
    /// `InvalidArgument` when a file cannot be read or holds no usable PEM
    /// (the message names the file, never its contents).
    pub(crate) fn new(tls: Option<&TlsOptions>) -> Result<Self> {
        let Some(tls) = tls else {
            return Ok(MakeTls {
                config: None,
                server_name: None,
            });
        };
        let material = tls.load()?;
        let config = client_config(Some(&material), &[]).ok_or_else(|| {
            Error::InvalidArgument(
                "tls: the CA, certificate or key given cannot make a TLS client \
                 configuration (is the key the certificate's?)"
                    .into(),
            )
        })?;
        Ok(MakeTls {
            config: Some(Arc::new(config)),
            server_name: material.server_name,
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<Connect> {
        let name = self
            .server_name
            .clone()
            .unwrap_or_else(|| domain.to_owned());
        let name = ServerName::try_from(name).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a name a certificate can carry: {e}"),
            )
        })?;
        Ok(Connect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One connection's handshake.
pub(crate) struct Connect {
    config: Option<Arc<ClientConfig>>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let Some(config) = self.config else {
                return Err(io::Error::other("TLS was not configured"));
            };
            let tls = TlsConnector::from(config)
                .connect(self.name, stream)
                .await?;
            Ok(TlsStream(Box::new(tls)))
        })
    }
}

/// A TLS stream tokio-postgres reads and writes.
pub(crate) struct TlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for TlsStream<S> {
    /// No channel binding: SCRAM runs without it (libpq's default
    /// `channel_binding=prefer` falls back the same way); the certificate
    /// check already authenticates the server.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

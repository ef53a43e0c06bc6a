//! The command line of `coordctl discover`, as clap parses it.

use clap::{Args, Subcommand};

/// Curator x-discovery's usual base path.
pub const DEFAULT_BASE: &str = "/services";

#[derive(Debug, Subcommand)]
pub enum DiscoverCommand {
    /// Register an instance of service NAME while CMD runs; print
    /// `registered ID`.
    ///
    /// The instance is the ephemeral node BASE/NAME/ID holding Curator
    /// x-discovery's JSON ({"name","id","address","port","sslPort",
    /// "payload","registrationTimeUTC","serviceType":"DYNAMIC","uriSpec"}),
    /// so Curator's ServiceDiscovery, ServiceCache and ServiceProvider see
    /// it. It is registered again, same id and JSON, whenever it is lost
    /// (the session ended, the node deleted), on a new session if need be;
    /// CMD keeps running meanwhile, and each loss and comeback is said on
    /// stderr. CMD gets COORD_SERVICE_ID. coordctl unregisters and exits
    /// with CMD's status when CMD ends; without CMD it stays registered
    /// until interrupted (130/143). If coordctl is killed, the instance
    /// goes with its session, after the session timeout.
    #[command(after_long_help = crate::exit::TABLE)]
    Register(RegisterArgs),

    /// List the registered instances of service NAME (of every service
    /// without NAME): one line each, `ID ADDRESS PORT` (`NAME ID ADDRESS
    /// PORT` without NAME), `-` for a missing port (the TLS port is used
    /// when there is no plain one); with --json, each instance's JSON, one
    /// per line.
    ///
    /// Instances registered by Curator are listed too; a node that holds no
    /// instance is skipped (a warning on stderr). None: nothing is
    /// printed, exit 0.
    #[command(after_long_help = crate::exit::TABLE)]
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The service's name (one path segment).
    pub name: String,
    /// This instance's host name or IP address, as clients should reach it.
    #[arg(long, value_name = "A")]
    pub address: String,
    /// This instance's port.
    #[arg(long, value_name = "P")]
    pub port: u16,
    /// Its TLS port, if any.
    #[arg(long, value_name = "P")]
    pub ssl_port: Option<u16>,
    /// Any JSON to publish with the instance (Curator's payload), e.g.
    /// '{"zone":"eu-1"}'.
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,
    /// The instance's id (one path segment; default: a fresh UUID, as
    /// Curator's).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Curator's base path.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_BASE)]
    pub base: String,
    /// A command to run while registered.
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The service's name; every service's instances without it.
    pub name: Option<String>,
    /// Curator's base path.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_BASE)]
    pub base: String,
    /// Print each instance's JSON (Curator's layout), one per line.
    #[arg(long)]
    pub json: bool,
}

//! `servio demo-site`: the demo site over HTTPS, until interrupted.

use anyhow::{Context, anyhow};
use servio_demo_site::{DemoAuth, LocalCa, Misbehaviour, Site, SiteConfig, serve_https_on};

use crate::cli::{AuthKind, DemoSiteArgs};
use crate::{Failure, Outcome};

pub fn run(args: &DemoSiteArgs) -> Result<Outcome, Failure> {
    let switches = args
        .misbehave
        .iter()
        .map(|pair| {
            let (path, mode) =
                pair.split_once('=').ok_or_else(|| anyhow!("--misbehave {pair:?} is not of the form PATH=MODE"))?;
            Ok((path.to_owned(), mode.parse::<Misbehaviour>().map_err(|e| anyhow!(e))?))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let ca = LocalCa::generate(&[])?;
    std::fs::create_dir_all(&args.tls_dir).with_context(|| format!("creating {}", args.tls_dir.display()))?;
    let ca_file = args.tls_dir.join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).with_context(|| format!("writing {}", ca_file.display()))?;
    let token = match &args.token {
        Some(token) => token.clone(),
        None => random_token()?,
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async {
        // Bind first: the origin in the manifest needs the real port when --addr says 0.
        let listener = std::net::TcpListener::bind(args.addr).with_context(|| format!("listening on {}", args.addr))?;
        let addr = listener.local_addr()?;
        let origin = format!("https://localhost:{}", addr.port());
        let auth = match args.auth {
            AuthKind::Oauth2 => DemoAuth::OAuth2 { access_ttl: std::time::Duration::from_secs(args.access_ttl) },
            AuthKind::Bearer => DemoAuth::Bearer,
        };
        let oauth = auth != DemoAuth::Bearer;
        let forum_db = args.tls_dir.join("forum.sqlite");
        let site = Site::new(SiteConfig { origin: origin.clone(), token: token.clone(), auth }, Some(&forum_db))
            .await
            .with_context(|| format!("opening the forum database {}", forum_db.display()))?;
        let verification_file = args.tls_dir.join("verification");
        site.watch_verification_file(verification_file.clone());
        for (path, how) in switches {
            site.set_misbehaviour(&path, Some(how));
        }
        let _running =
            serve_https_on(listener, &ca, site.router()).await.with_context(|| format!("serving on {addr}"))?;
        println!("Servio demo site on {origin}");
        println!("  manifest:  {origin}/.well-known/servio.json");
        println!("  CA file:   {}", ca_file.display());
        if oauth {
            println!("  auth:      OAuth 2.0 with PKCE ({origin}/oauth/authorize); run servio login {origin}");
        } else {
            println!("  token:     {token}");
        }
        println!("  Directory: put a verification token in {} to list it", verification_file.display());
        println!("try: servio check {origin} --ca-cert {}", ca_file.display());
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Ok)
}

/// 32 hex digits from the operating system's randomness.
fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| anyhow!("no randomness for a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

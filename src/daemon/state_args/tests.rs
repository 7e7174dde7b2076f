use super::*;
use crate::state::admin::Request;
use clap::Parser;

/// The root command as far as `state` needs it (the real one, in
/// `args.rs`, is driven by tests/state_cli.rs: this module must not
/// import it back).
#[derive(Parser, Debug)]
#[command(name = "cronstable")]
struct Root {
    #[arg(short = 'c', long = "config")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: RootCommand,
}

#[derive(clap::Subcommand, Debug)]
enum RootCommand {
    State(StateArgs),
}

fn parse(args: &[&str]) -> Result<Root, clap::Error> {
    Root::try_parse_from(std::iter::once("cronstable").chain(args.iter().copied()))
}

fn command(args: &[&str]) -> StateCommand {
    let root = parse(args).expect("the arguments parse");
    let RootCommand::State(state) = &root.command;
    state.command(root.config.as_deref())
}

fn admin(config: &str, request: Request) -> StateCommand {
    StateCommand::Admin {
        config: PathBuf::from(config),
        request,
    }
}

#[test]
fn config_is_taken_before_or_after_the_action() {
    let gc = Request::Gc { dry_run: false };
    assert_eq!(
        command(&["-c", "x.yaml", "state", "gc"]),
        admin("x.yaml", gc.clone())
    );
    assert_eq!(
        command(&["state", "gc", "-c", "x.yaml"]),
        admin("x.yaml", gc.clone())
    );
    assert_eq!(
        command(&["state", "gc", "--config", "y.yaml"]),
        admin("y.yaml", gc.clone())
    );
    // Both: the action's wins (the original's SUPPRESS default).
    assert_eq!(
        command(&["-c", "root.yaml", "state", "gc", "-c", "own.yaml"]),
        admin("own.yaml", gc.clone())
    );
    // Neither: the default location.
    assert_eq!(
        command(&["state", "gc"]),
        admin(platform::DEFAULT_CONFIG_PATH, gc)
    );
    // Between `state` and the action: not accepted (as in the original).
    assert!(parse(&["state", "-c", "x.yaml", "gc"]).is_err());
}

#[test]
fn every_action_parses_its_flags() {
    assert_eq!(
        command(&["state", "backup", "-o", "b.tar.gz", "-c", "c"]),
        admin(
            "c",
            Request::Backup {
                output: "b.tar.gz".into()
            }
        )
    );
    assert_eq!(
        command(&["state", "backup", "--output", "b.tar.gz", "-c", "c"]),
        admin(
            "c",
            Request::Backup {
                output: "b.tar.gz".into()
            }
        )
    );
    assert!(parse(&["state", "backup"]).is_err(), "-o is required");
    assert_eq!(
        command(&["state", "restore", "b.tar.gz", "--force", "-c", "c"]),
        admin(
            "c",
            Request::Restore {
                archive: "b.tar.gz".into(),
                force: true
            }
        )
    );
    assert_eq!(
        command(&["state", "restore", "b.tar.gz", "-c", "c"]),
        admin(
            "c",
            Request::Restore {
                archive: "b.tar.gz".into(),
                force: false
            }
        )
    );
    assert_eq!(
        command(&[
            "state",
            "migrate",
            "--dest",
            "/d",
            "--dest-deployment-id",
            "ns",
            "-c",
            "c"
        ]),
        admin(
            "c",
            Request::Migrate {
                dest: "/d".into(),
                dest_deployment_id: Some("ns".into()),
                force: false
            }
        )
    );
    assert!(parse(&["state", "migrate"]).is_err(), "--dest is required");
    assert_eq!(
        command(&["state", "gc", "--dry-run", "-c", "c"]),
        admin("c", Request::Gc { dry_run: true })
    );
    assert_eq!(
        command(&["state", "check", "-c", "c"]),
        admin("c", Request::Check)
    );
    assert_eq!(
        command(&["state", "migrate-schema", "--dry-run", "-c", "c"]),
        admin("c", Request::MigrateSchema { dry_run: true })
    );
    assert!(parse(&["state", "frobnicate"]).is_err());
}

#[test]
fn no_action_is_a_usage_error() {
    assert_eq!(
        command(&["state"]),
        StateCommand::Usage(
            "cronstable state: no action given (see `cronstable state --help`)".to_owned()
        )
    );
}

#[test]
fn the_job_facing_actions_go_to_the_job_cli() {
    use crate::jobcli::model::{Action, Verb};
    let job = |args: &[&str]| match command(args) {
        StateCommand::Job(invocation) => {
            assert_eq!(invocation.verb, Verb::State);
            invocation.action.expect("an action")
        }
        other => panic!("{args:?}: {other:?}"),
    };
    let scope = Some("s".into());
    assert_eq!(
        job(&["state", "get", "k", "--scope", "s"]),
        Action::KvGet {
            key: "k".into(),
            scope: scope.clone()
        }
    );
    assert_eq!(
        job(&["state", "set", "k", "v", "--json", "--scope", "s"]),
        Action::KvSet {
            key: "k".into(),
            value: "v".into(),
            json: true,
            scope: scope.clone()
        }
    );
    assert_eq!(
        job(&["state", "delete", "k", "--global"]),
        Action::KvDelete {
            key: "k".into(),
            scope: Some("global".into())
        }
    );
    assert_eq!(job(&["state", "keys"]), Action::KvKeys { scope: None });
    // The admin actions are not job actions.
    let root = parse(&["state", "gc"]).unwrap();
    let RootCommand::State(state) = &root.command;
    assert!(state.job_action().is_none());
}

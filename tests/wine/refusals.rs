//! What the Windows build cannot do, refused in one paragraph that says what to use instead,
//! never a panic: a Docker engine named by a unix socket's path; nerdctl's containerd, which
//! listens on a unix socket only.

use snapbox::str;

use crate::on_windows::windows;

#[test]
fn a_docker_host_on_a_unix_socket_says_to_use_the_pipe_or_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let run = windows(home.path())
        .env("DOCKER_HOST", "unix:///var/run/docker.sock")
        .args(["push", "myimg:dev", "--registry", "127.0.0.1:5000"])
        .output();
    run.assert_stdout(str![]);
    run.assert_stderr(str![[r#"
error: "myimg:dev" is not a file, and no local engine has it:
  docker: unix:///var/run/docker.sock is a unix socket, which this Windows build cannot reach: point DOCKER_HOST at the engine's named pipe (npipe:////./pipe/docker_engine) or unset it to use the docker CLI
hint: pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has

"#]]);
    assert_eq!(run.code, 4);
}

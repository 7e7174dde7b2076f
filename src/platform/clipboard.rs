//! The system clipboard through the platform's copy tool: `clip.exe` on
//! Windows, `pbcopy` on macOS, `wl-copy` or `xclip` elsewhere, whichever
//! is installed. The terminal dashboard takes this path beside its OSC 52
//! escape (which asks the terminal emulator instead, and is the only
//! path to a local clipboard over SSH).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a copy tool may take to read the text and leave.
const TOOL_DEADLINE: Duration = Duration::from_secs(3);

/// Why no copy tool took the text.
#[derive(Debug, thiserror::Error)]
pub enum ClipboardError {
    /// None of the platform's tools is installed.
    #[error("no clipboard tool found (tried {0})")]
    NoTool(String),
    /// The tools found all failed; the last one's complaint.
    #[error("{tool}: {why}")]
    Failed {
        /// The tool.
        tool: &'static str,
        /// What went wrong.
        why: String,
    },
}

/// A copy tool: the program, its arguments, and how it wants the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyTool {
    /// The program, looked up on `PATH`.
    pub program: &'static str,
    /// Its arguments.
    pub args: &'static [&'static str],
    /// UTF-16LE with a byte-order mark (clip.exe), else UTF-8.
    pub utf16: bool,
}

const WL_COPY: CopyTool = CopyTool {
    program: "wl-copy",
    args: &[],
    utf16: false,
};
const XCLIP: CopyTool = CopyTool {
    program: "xclip",
    args: &["-selection", "clipboard"],
    utf16: false,
};

/// The tools to try on a Linux (or other Unix) desktop, in order: the
/// Wayland one first in a Wayland session, else the X11 one first.
pub fn unix_copy_tools(wayland: bool) -> [CopyTool; 2] {
    if wayland {
        [WL_COPY, XCLIP]
    } else {
        [XCLIP, WL_COPY]
    }
}

/// This platform's copy tools, in the order they are tried.
#[cfg(windows)]
pub fn copy_tools() -> Vec<CopyTool> {
    vec![CopyTool {
        program: "clip.exe",
        args: &[],
        utf16: true,
    }]
}

/// This platform's copy tools, in the order they are tried.
#[cfg(target_os = "macos")]
pub fn copy_tools() -> Vec<CopyTool> {
    vec![CopyTool {
        program: "pbcopy",
        args: &[],
        utf16: false,
    }]
}

/// This platform's copy tools, in the order they are tried.
#[cfg(not(any(windows, target_os = "macos")))]
pub fn copy_tools() -> Vec<CopyTool> {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty());
    unix_copy_tools(wayland).to_vec()
}

/// The bytes `tool` reads for `text`.
pub fn tool_input(tool: &CopyTool, text: &str) -> Vec<u8> {
    if tool.utf16 {
        // clip.exe reads the console's code page unless told otherwise by
        // the byte-order mark.
        std::iter::once('\u{feff}')
            .chain(text.chars())
            .collect::<String>()
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect()
    } else {
        text.as_bytes().to_vec()
    }
}

/// Puts `text` on the clipboard with the first installed tool that takes
/// it (exit 0); answers that tool's name. Blocks for as long as the tool
/// takes, at most a few seconds: call it off the thread that draws.
pub fn copy_to_clipboard(text: &str) -> Result<&'static str, ClipboardError> {
    let tools = copy_tools();
    let mut last: Option<ClipboardError> = None;
    for tool in &tools {
        match run_tool(tool, text) {
            Ok(()) => return Ok(tool.program),
            Err(None) => {}
            Err(Some(why)) => {
                last = Some(ClipboardError::Failed {
                    tool: tool.program,
                    why,
                })
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        let names: Vec<&str> = tools.iter().map(|t| t.program).collect();
        ClipboardError::NoTool(names.join(", "))
    }))
}

/// Runs one tool; `Err(None)` when it is not installed.
fn run_tool(tool: &CopyTool, text: &str) -> Result<(), Option<String>> {
    // The X11 and Wayland tools stay behind to serve the selection: they
    // must not hold the terminal's output.
    let mut child = match Command::new(tool.program)
        .args(tool.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(e.to_string())),
    };
    // The input is written from a thread of its own, so the deadline
    // covers the writing too: a text larger than the pipe's buffer given
    // to a tool that never reads would otherwise block here for good.
    // Killing the tool ends such a write (broken pipe).
    let writer = child.stdin.take().map(|mut stdin| {
        let input = tool_input(tool, text);
        std::thread::spawn(move || stdin.write_all(&input))
        // stdin is dropped at the thread's end: the tool sees the end of
        // its input
    });
    let start = Instant::now();
    let waited = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Ok(()),
            Ok(Some(status)) => break Err(Some(format!("exited with {status}"))),
            Ok(None) if start.elapsed() < TOOL_DEADLINE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(Some("did not finish in 3 seconds".to_owned()));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(Some(e.to_string()));
            }
        }
    };
    let written = writer.map(|w| w.join());
    match (waited, written) {
        (Err(why), _) => Err(why),
        (Ok(()), Some(Ok(Err(e)))) => Err(Some(format!("cannot write to it: {e}"))),
        (Ok(()), Some(Err(_))) => Err(Some("its writer thread panicked".to_owned())),
        (Ok(()), _) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wayland_session_tries_wl_copy_first_else_xclip() {
        let names = |w| unix_copy_tools(w).map(|t| t.program);
        assert_eq!(names(true), ["wl-copy", "xclip"]);
        assert_eq!(names(false), ["xclip", "wl-copy"]);
        assert_eq!(unix_copy_tools(false)[0].args, ["-selection", "clipboard"]);
    }

    #[test]
    fn clip_exe_reads_utf16_with_a_byte_order_mark() {
        let clip = CopyTool {
            program: "clip.exe",
            args: &[],
            utf16: true,
        };
        assert_eq!(tool_input(&clip, "é"), [0xff, 0xfe, 0xe9, 0x00]);
        assert_eq!(tool_input(&XCLIP, "é"), "é".as_bytes());
    }
}

//! The mark at the head of the header, the **Living logo** setting's
//! subject.

/// The header's mark: a clock hand that sweeps a quarter turn each
/// second while the daemon answers and the living logo is on, and holds
/// still otherwise (so a frozen hand also says the link is down).
pub fn mark(living: bool, connected: bool, ascii: bool, wall: f64) -> &'static str {
    const ROUND: [&str; 4] = ["◷", "◶", "◵", "◴"];
    const PLAIN: [&str; 4] = ["|", "/", "-", "\\"];
    let frames = if ascii { PLAIN } else { ROUND };
    if !(living && connected) {
        return frames[0];
    }
    frames[(wall.max(0.0) as u64 % 4) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_sweeps_only_while_living_and_connected() {
        let frames: Vec<&str> = (0..5)
            .map(|s| mark(true, true, false, 100.0 + s as f64 + 0.5))
            .collect();
        assert_eq!(frames, ["◷", "◶", "◵", "◴", "◷"]);
        assert_eq!(mark(true, true, true, 101.0), "/");
        for wall in [100.0, 101.0, 102.0, 103.0] {
            assert_eq!(mark(false, true, false, wall), "◷");
            assert_eq!(mark(true, false, false, wall), "◷");
            assert_eq!(mark(false, true, true, wall), "|");
        }
    }
}

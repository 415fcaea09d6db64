//! Every kind of mark a timeline draws, the layer it is painted in, and the legend that
//! shows a sample of each.

use super::*;

/// Every kind of mark, in legend order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Mark {
    Hold,
    HoldInner,
    HoldFocus,
    HoldOther,
    StaleGrant,
    Leader,
    Partition,
    Pause,
    Crash,
    DiskStall,
    Suspended,
    Lost,
    ClockFault,
    Expiry,
    ExpiryFocus,
    Write,
    WriteRejected,
    WriteFocus,
    Named,
    NamedOther,
}

impl Mark {
    /// What the mark means, as the legend says it.
    pub(super) fn label(self) -> String {
        match self {
            Mark::Hold => "hold (acquire ok to release), token as label".into(),
            Mark::HoldInner => "re-entrant hold, inside the holder's outer hold".into(),
            Mark::HoldFocus => "hold a violation names".into(),
            Mark::HoldOther => "hold only another check's violation names".into(),
            Mark::StaleGrant => "stale grant: token lower than one granted before".into(),
            Mark::Leader => "leader and its term".into(),
            Mark::Partition => "partition (band: a node on the cut-off side)".into(),
            Mark::Pause => "paused".into(),
            Mark::Crash => "crashed (until restart)".into(),
            Mark::DiskStall => "disk stall".into(),
            Mark::Suspended => "connection SUSPENDED".into(),
            Mark::Lost => "connection LOST".into(),
            Mark::ClockFault => "clock jump, skew or drift".into(),
            Mark::Expiry => "server expiry of a lock key".into(),
            Mark::ExpiryFocus => "expiry a violation names".into(),
            Mark::Write => "storage write".into(),
            Mark::WriteRejected => "storage write rejected by fencing".into(),
            Mark::WriteFocus => "storage write a violation names".into(),
            Mark::Named => "other event a violation names".into(),
            Mark::NamedOther => "event only another check's violation names".into(),
        }
    }

    /// The layer it is painted in: what a violation names goes over everything else.
    pub(super) fn layer(self) -> Layer {
        match self {
            Mark::HoldFocus | Mark::ExpiryFocus | Mark::WriteFocus | Mark::Named => Layer::Focus,
            Mark::HoldOther | Mark::NamedOther => Layer::Other,
            _ => Layer::Base,
        }
    }

    /// A hold bar over `[x0, x1]`, `h` high around the centre line `cy` (a lane's
    /// sub-row), with `tip` as tooltip.
    pub(super) fn hold_bar(self, x0: f64, x1: f64, cy: f64, h: f64, tip: &str) -> String {
        let fill = match self {
            Mark::HoldFocus => RED,
            Mark::HoldOther => LIGHT_RED,
            Mark::HoldInner => PALE_GREEN,
            _ => GREEN,
        };
        format!(
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{fill}"><title>{tip}</title></rect>"##,
            cy - h / 2.0,
            (x1 - x0).max(2.0)
        )
    }

    /// The mark drawn over `[x0, x1]` around the centre line `y` (a lane's, or the
    /// legend's), with `tip` as tooltip.
    pub(super) fn draw(self, x0: f64, x1: f64, y: f64, tip: &str) -> String {
        let w = (x1 - x0).max(2.0);
        let t = format!("<title>{tip}</title>");
        let bar = |fill: &str, top: f64, h: f64| {
            format!(
                r##"<rect x="{x0:.1}" y="{:.1}" width="{w:.1}" height="{h}" fill="{fill}">{t}</rect>"##,
                y + top
            )
        };
        match self {
            Mark::Hold => bar(GREEN, -7.0, 14.0),
            Mark::HoldInner => bar(PALE_GREEN, -7.0, 14.0),
            Mark::HoldFocus => bar(RED, -7.0, 14.0),
            Mark::HoldOther => bar(LIGHT_RED, -7.0, 14.0),
            Mark::Leader => bar(LEADERS[0], -8.0, 16.0),
            Mark::Partition => bar(ORANGE, -7.0, 14.0),
            Mark::Pause => bar(PAUSE, -LANE / 2.0 + 1.0, LANE - 2.0),
            Mark::Crash => bar(CRASH, -LANE / 2.0 + 1.0, LANE - 2.0),
            Mark::DiskStall => bar(BROWN, 10.0, 4.0),
            Mark::Suspended => bar(AMBER, 10.0, 4.0),
            Mark::Lost => bar(LOST, 10.0, 4.0),
            Mark::StaleGrant => format!(
                r##"<path d="M{x0:.1} {:.1} l6 6 l-6 6 l-6 -6 z" fill="{AMBER}" stroke="#000">{t}</path>"##,
                y - 6.0
            ),
            Mark::ClockFault => format!(
                r##"<path d="M{:.1} {:.1} l5 -9 l5 9 z" fill="{PURPLE}">{t}</path>"##,
                x0 - 5.0,
                y + 14.0
            ),
            Mark::Expiry | Mark::ExpiryFocus => format!(
                r##"<path d="M{:.1} {:.1} l8 8 m0 -8 l-8 8" stroke="{}" stroke-width="2">{t}</path>"##,
                x0 - 4.0,
                y - 4.0,
                if self == Mark::Expiry { "#333" } else { RED }
            ),
            Mark::Write | Mark::WriteRejected | Mark::WriteFocus => format!(
                r##"<rect x="{:.1}" y="{:.1}" width="4" height="14" fill="{}" stroke="{BLUE}">{t}</rect>"##,
                x0 - 2.0,
                y - 7.0,
                match self {
                    Mark::Write => BLUE,
                    Mark::WriteRejected => "none",
                    _ => RED,
                }
            ),
            Mark::Named | Mark::NamedOther => format!(
                r##"<circle cx="{x0:.1}" cy="{y}" r="5" fill="none" stroke="{}" stroke-width="2">{t}</circle>"##,
                if self == Mark::Named { RED } else { LIGHT_RED }
            ),
        }
    }

    /// How far the legend moves the mark's centre line so that the sample sits on the
    /// legend's text line (marks drawn along a lane's bottom edge are lifted).
    pub(super) fn legend_dy(self) -> f64 {
        match self {
            Mark::DiskStall | Mark::Suspended | Mark::Lost => -12.0,
            Mark::ClockFault => -9.0,
            _ => 0.0,
        }
    }

    /// Whether the mark is a bar (its legend sample is one).
    pub(super) fn is_bar(self) -> bool {
        !matches!(
            self,
            Mark::StaleGrant
                | Mark::ClockFault
                | Mark::Expiry
                | Mark::ExpiryFocus
                | Mark::Write
                | Mark::WriteRejected
                | Mark::WriteFocus
                | Mark::Named
                | Mark::NamedOther
        )
    }
}

/// A legend sample of `m`: a small SVG (sized by the page's style) with the mark centred.
pub(super) fn legend_sample(m: Mark) -> String {
    let drawn = match m {
        Mark::Pause | Mark::Crash => {
            let fill = if m == Mark::Crash { CRASH } else { PAUSE };
            format!(r##"<rect x="2" y="0" width="16" height="16" fill="{fill}"/>"##)
        }
        _ if m.is_bar() => m.draw(2.0, 18.0, 8.0 + m.legend_dy(), ""),
        _ => m.draw(10.0, 10.0, 8.0 + m.legend_dy(), ""),
    };
    // An empty tooltip says nothing: the label beside the sample does.
    let drawn = drawn.replace("<title></title>", "");
    format!(r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 20 16">{drawn}</svg>"#)
}

/// The legend from `y`: a sample of each mark in `marks` with its label, wrapping onto
/// as many lines as needed; returns the picture's bottom.
pub(super) fn draw_legend(s: &mut String, marks: &BTreeSet<Mark>, y: f64) -> f64 {
    let mut x = 8.0;
    let mut line_y = y + 12.0;
    for &m in marks {
        let label = m.label();
        let w = 22.0 + text_width(&label, SMALL) + 18.0;
        if x + w > WIDTH - 8.0 && x > 8.0 {
            x = 8.0;
            line_y += 22.0;
        }
        let sample = if m.is_bar() {
            // Full-lane bands are drawn shorter in the legend: a 16 px box.
            let cy = if matches!(m, Mark::Pause | Mark::Crash) {
                0.0
            } else {
                line_y
            };
            let mut d = m.draw(x, x + 16.0, cy + m.legend_dy(), &esc(&label));
            if cy == 0.0 {
                let fill = if m == Mark::Crash { CRASH } else { PAUSE };
                d = format!(
                    r##"<rect x="{x:.1}" y="{:.1}" width="16" height="16" fill="{fill}"/>"##,
                    line_y - 8.0
                );
            }
            d
        } else {
            m.draw(x + 8.0, x + 8.0, line_y + m.legend_dy(), &esc(&label))
        };
        s.push_str(&sample);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="{SMALL}" fill="#333">{}</text>"##,
            x + 22.0,
            line_y + 4.0,
            esc(&label)
        );
        x += w;
    }
    line_y + 18.0
}

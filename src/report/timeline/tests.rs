//! The timeline's unit tests.

use super::*;
use crate::check::Violation;
use serde_json::json;

fn ev(i: u64, p: &str, kind: EventType, f: &str, t_ms: u64) -> Event {
    let mut e = Event::new(p, kind, f).at(t_ms * 1_000_000).lock("L");
    e.index = i;
    e
}

fn nem(i: u64, f: &str, t_ms: u64, nodes: &[&str], value: Value) -> Event {
    let mut e = Event::new("nemesis", EventType::Event, f)
        .at(t_ms * 1_000_000)
        .nodes(nodes.iter().map(|n| n.to_string()).collect())
        .value(value);
    e.index = i;
    e
}

fn mutex(events: Vec<u64>) -> Vec<CheckReport> {
    vec![CheckReport {
        name: "mutex",
        kind: crate::check::CheckKind::Safety,
        verdict: crate::check::Verdict::Violated,
        violations: vec![Violation::new("overlap", events)],
    }]
}

fn redis_history() -> Vec<Event> {
    vec![
        ev(0, "client-0", EventType::Invoke, "acquire", 90),
        ev(1, "client-0", EventType::Ok, "acquire", 100).token(Some(17)),
        nem(
            2,
            "pause",
            150,
            &["client-0"],
            json!({"duration_ms": 1500.0, "at": "anywhere"}),
        ),
        ev(3, "redis-0", EventType::Event, "expire", 1100),
        ev(4, "client-1", EventType::Ok, "acquire", 1200).token(Some(18)),
        nem(5, "resume", 1650, &["client-0"], Value::Null),
        ev(6, "client-0", EventType::Invoke, "release", 1700),
        nem(7, "crash", 1800, &["redis-0"], json!({"down_ms": 300.0})),
        nem(8, "restart", 2100, &["redis-0"], Value::Null),
    ]
}

#[test]
fn draws_lanes_holds_faults_and_the_violation() {
    let h = redis_history();
    let svg = timeline_svg(
        &h,
        &mutex(vec![1, 4, 6]),
        "mutex",
        3_000_000_000,
        "row 1 <seed 0>",
    );
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    for lane in ["redis-0", "client-0", "client-1"] {
        assert!(svg.contains(&format!(">{lane}</text>")), "{lane}");
    }
    assert!(svg.contains(RED), "the violating holds are red");
    assert!(svg.contains("client-0 paused from 150 ms to 1.65 s true time (1.5 s)"));
    assert!(svg.contains("row 1 &lt;seed 0&gt;"), "text is escaped");
    assert!(svg.contains("mutex: overlap"), "the violation's message");
    assert!(!svg.contains("<script") && !svg.contains("href") && !svg.contains(" id="));
    assert!(!svg.contains("network"), "no partition, no network lane");
    assert!(!svg.contains(">leader</text>"), "no leader, no leader lane");
}

#[test]
fn legend_lists_the_marks_present_and_only_those() {
    let h = redis_history();
    let svg = timeline_svg(&h, &mutex(vec![1, 4, 6]), "mutex", 3_000_000_000, "t");
    for m in [Mark::HoldFocus, Mark::Pause, Mark::Crash, Mark::Expiry] {
        assert!(
            svg.contains(&format!(">{}</text>", esc(&m.label()))),
            "{m:?}"
        );
    }
    for m in [
        Mark::Partition,
        Mark::Leader,
        Mark::Suspended,
        Mark::WriteRejected,
    ] {
        assert!(!svg.contains(&esc(&m.label())), "{m:?}");
    }
}

#[test]
fn crash_and_pause_look_different() {
    let h = redis_history();
    let svg = timeline_svg(&h, &mutex(vec![1, 4, 6]), "mutex", 3_000_000_000, "t");
    let fill_of = |tip: &str| {
        let at = svg.find(tip).expect(tip);
        let rect = svg[..at].rfind("<rect").unwrap();
        svg[rect..at].split("fill=\"").nth(1).unwrap()[..4].to_string()
    };
    assert_eq!(fill_of("redis-0 crashed from"), CRASH);
    assert_eq!(&fill_of("client-0 paused from")[..4], &PAUSE[..4]);
    assert_ne!(CRASH, PAUSE);
}

#[test]
fn partitions_get_a_network_lane_and_human_tooltips() {
    let mut h = redis_history();
    h.push(nem(
        9,
        "partition",
        1300,
        &["raft-0"],
        json!({"id": 4, "oneway": false, "from": ["raft-1", "raft-2", "client-0"]}),
    ));
    h.push(nem(10, "heal", 1900, &[], json!({"id": 4})));
    let svg = timeline_svg(&h, &mutex(vec![1, 4, 6]), "mutex", 3_000_000_000, "t");
    assert!(svg.contains(">network</text>"));
    assert!(svg.contains(
        "partition: {raft-0} cut off from {raft-1, raft-2, client-0} (both ways), from 1.3 s to 1.9 s"
    ));
    // The full label does not fit in or right of the bar: the short one does.
    assert!(svg.contains(">{raft-0} cut off</text>"), "{svg}");
    // The network lane is above the first node lane and the band inside raft-0's lane.
    let net = svg.find(">network</text>").unwrap();
    assert!(net < svg.find(">raft-0</text>").unwrap());
    assert!(!svg.contains(r#"value="#), "no raw JSON");
    let mut jump = nem(
        11,
        "clock-jump",
        1000,
        &["redis-0"],
        json!({"delta_ms": 1200.0, "wall_error_ms": 1200.0}),
    );
    jump.local_ns = Some(1_000_000_000);
    jump.wall_ms = Some(crate::sim::EPOCH_NS / 1_000_000 + 2_200);
    assert_eq!(
        title(&jump),
        "clock jump +1.2 s on redis-0 (wall clock now +1.2 s from true time) at 1 s true time; redis-0 local mono 1 s, local wall 00:00:02.200"
    );
}

#[test]
fn a_long_token_label_is_never_clipped() {
    let h = vec![
        ev(0, "client-0", EventType::Ok, "acquire", 1000).token(Some(12345)),
        ev(1, "client-0", EventType::Invoke, "release", 1010),
        ev(2, "client-0", EventType::Ok, "acquire", 2000).token(Some(12346)),
        ev(3, "client-0", EventType::Invoke, "release", 2900),
    ];
    let svg = timeline_svg(&h, &[], "mutex", 3_000_000_000, "t");
    // Short hold: dark label to the right of its bar; long hold: white label inside.
    assert!(svg.contains(r##"fill="#222">token 12345</text>"##), "{svg}");
    assert!(svg.contains(r##"fill="#fff">token 12346</text>"##), "{svg}");
    let x = |tok: &str| {
        let at = svg.find(&format!(">{tok}</text>")).unwrap();
        let t = svg[..at].rfind("<text x=\"").unwrap() + 9;
        svg[t..].split('"').next().unwrap().parse::<f64>().unwrap()
    };
    let left = |t_ms: u64| LEFT + t_ms as f64 / 3000.0 * (RIGHT - LEFT);
    assert!(
        x("token 12345") > left(1010),
        "outside, right of the short bar"
    );
    assert!(x("token 12346") >= left(2000));
}

#[test]
fn raft_histories_get_a_leader_lane_and_stale_grants() {
    let leader = |i, p: &str, t, term: u64| {
        let mut e = ev(i, p, EventType::Event, "leader", t).value(json!({"term": term}));
        e.lock = None;
        e
    };
    let h = vec![
        leader(0, "raft-0", 100, 1),
        ev(1, "client-0", EventType::Ok, "acquire", 500).token(Some(23)),
        leader(2, "raft-1", 900, 2),
        ev(3, "client-1", EventType::Ok, "acquire", 1000).token(Some(21)),
        ev(4, "client-1", EventType::Invoke, "release", 1100),
        ev(5, "client-0", EventType::Invoke, "release", 1500),
    ];
    let svg = timeline_svg(&h, &mutex(vec![1, 3, 4, 5]), "mutex", 2_000_000_000, "t");
    assert!(svg.contains(">leader</text>"));
    assert!(svg.contains(">raft-0 · term 1</text>") && svg.contains(">raft-1 · term 2</text>"));
    assert!(svg.contains("raft-0 becomes leader (term 1), leads until 900 ms true time"));
    assert!(svg.contains(">stale grant (token 21 after 23)</text>"));
    assert!(svg.contains(&esc(&Mark::StaleGrant.label())));
}

#[test]
fn zk_clients_get_connection_bands() {
    let conn = |i, t, state: &str| {
        let mut e = ev(i, "client-0", EventType::Event, "connection", t).value(state);
        e.lock = None;
        e
    };
    let h = vec![
        conn(0, 100, "CONNECTED"),
        ev(1, "client-0", EventType::Ok, "acquire", 200),
        conn(2, 700, "SUSPENDED"),
        conn(3, 1200, "LOST"),
        ev(4, "client-1", EventType::Ok, "acquire", 1500),
        ev(5, "client-0", EventType::Invoke, "release", 1800),
    ];
    let svg = timeline_svg(&h, &mutex(vec![1, 4, 5]), "mutex", 2_000_000_000, "t");
    assert!(svg.contains("client-0 connection SUSPENDED from 700 ms to 1.2 s true time"));
    assert!(
        svg.contains(&format!("fill=\"{AMBER}\"")) && svg.contains(&format!("fill=\"{LOST}\""))
    );
    assert!(
        svg.contains(">connection SUSPENDED</text>") && svg.contains(">connection LOST</text>")
    );
}

#[test]
fn times_read_like_people_write_them() {
    assert_eq!(human_time(2_445_000_000), "2.445 s");
    assert_eq!(human_time(3_000_000_000), "3 s");
    assert_eq!(human_time(850_000_000), "850 ms");
    assert_eq!(human_time(12_500_000), "12.5 ms");
    assert_eq!(human_time(40_000), "40 µs");
    assert_eq!(human_time(-80_000_000), "-80 ms");
    assert_eq!(human_time(0), "0 s");
    assert_eq!(human_time(7), "7 ns");
    assert_eq!(signed_time(1_200_000_000), "+1.2 s");
}

/// A lock whose counter went back: client-0 is granted token 30, then every later grant
/// (three to client-1, one to client-2) comes from the stale view, tokens 1 to 4.
fn stale_history() -> Vec<Event> {
    let mut h = vec![ev(0, "client-0", EventType::Ok, "acquire", 100).token(Some(30))];
    h.push(ev(1, "client-0", EventType::Invoke, "release", 200));
    for (i, t) in [(2u64, 400u64), (4, 600), (6, 800)] {
        h.push(ev(i, "client-1", EventType::Ok, "acquire", t).token(Some(i / 2)));
        h.push(ev(i + 1, "client-1", EventType::Invoke, "release", t + 50));
    }
    h.push(ev(8, "client-2", EventType::Ok, "acquire", 1000).token(Some(4)));
    h.push(ev(9, "client-2", EventType::Invoke, "release", 1100));
    h
}

#[test]
fn stale_grants_get_one_label_per_lane_and_every_one_a_tooltip() {
    let h = stale_history();
    let d = draw(&h, &mutex(vec![0, 8]), &["mutex"], 1_500_000_000);
    // client-1's three are counted in one note; client-2's one is labelled beside it.
    assert_eq!(
        d.svg.matches(">3 stale grants</text>").count(),
        1,
        "{}",
        d.svg
    );
    assert_eq!(d.svg.matches(">stale grant (").count(), 1, "{}", d.svg);
    assert!(d.svg.contains(">stale grant (token 4 after 30)</text>"));
    assert_eq!(d.svg.matches("<title>stale grant: ").count(), 4);
}

#[test]
fn captions_name_the_stale_grant_a_violation_names() {
    let h = stale_history();
    let d = draw(&h, &mutex(vec![0, 8]), &["mutex"], 1_500_000_000);
    let cap = &d.captions[0];
    assert_eq!((cap.check, cap.focus), ("mutex", true));
    assert_eq!(cap.events.len(), 2);
    assert_eq!(cap.events[0].0, "100 ms");
    assert!(
        cap.events[1]
            .1
            .contains("a stale grant: token 30 had already been granted to client-0 at 100 ms"),
        "{:?}",
        cap.events
    );
    // The words are beside the picture, not in it.
    assert!(!d.svg.contains("overlap") && !d.svg.contains("hover"));
    assert_eq!(d.window, "true time 0 s to 1.4 s");
}

#[test]
fn nested_holds_are_two_bars_and_the_outer_lasts_to_the_last_release() {
    let inner = |e: Event| e.reentrant(true);
    let h = vec![
        ev(0, "client-0", EventType::Ok, "acquire", 100).token(Some(5)),
        inner(ev(1, "client-0", EventType::Invoke, "acquire", 150)),
        inner(ev(2, "client-0", EventType::Ok, "acquire", 160).token(Some(5))),
        inner(ev(3, "client-0", EventType::Invoke, "release", 300)),
        ev(4, "client-1", EventType::Ok, "acquire", 350).token(Some(6)),
        ev(5, "client-0", EventType::Invoke, "release", 600),
        ev(6, "client-1", EventType::Invoke, "release", 700),
    ];
    let d = draw(&h, &mutex(vec![0, 4, 5, 6]), &["mutex"], 1_000_000_000);
    let bars: Vec<&str> = d
        .svg
        .split("<rect ")
        .filter(|r| r.contains("<title>client-0 held L"))
        .collect();
    assert_eq!(bars.len(), 2, "{}", d.svg);
    let y = |r: &str| {
        r.split("y=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    assert_ne!(y(bars[0]), y(bars[1]), "stacked, not on top of each other");
    assert!(d
        .svg
        .contains("client-0 held L with token 5 from 100 ms to 600 ms"));
    assert!(d
        .svg
        .contains("client-0 held L again (re-entrant) with token 5 from 160 ms to 300 ms"));
    assert!(d.legend.iter().any(|(_, l)| *l == Mark::HoldInner.label()));
}

#[test]
fn highlighted_marks_are_painted_last() {
    let h = redis_history();
    let d = draw(&h, &mutex(vec![1, 4, 6]), &["mutex"], 3_000_000_000);
    let first_red = d.svg.find(&format!("fill=\"{RED}\"")).expect("red marks");
    for plain in [PAUSE, CRASH] {
        let last = d.svg.rfind(&format!("fill=\"{plain}\"")).expect(plain);
        assert!(last < first_red, "{plain} painted over a highlight");
    }
}

#[test]
fn the_picture_scales_to_its_container() {
    let h = redis_history();
    let d = draw(&h, &mutex(vec![1, 4, 6]), &["mutex"], 3_000_000_000);
    let root = &d.svg[..d.svg.find('>').unwrap()];
    assert!(root.contains(&format!("viewBox=\"0 0 {WIDTH} ")), "{root}");
    assert!(
        !root.contains(" width=") && !root.contains(" height="),
        "{root}"
    );
    for (sample, _) in &d.legend {
        let root = &sample[..sample.find('>').unwrap()];
        assert!(
            root.contains("viewBox") && !root.contains(" width="),
            "{root}"
        );
    }
}

#[test]
fn one_picture_marks_every_focused_check() {
    let h = redis_history();
    let mut reports = mutex(vec![1, 4, 6]);
    reports.push(CheckReport {
        name: "fencing",
        kind: crate::check::CheckKind::Safety,
        verdict: crate::check::Verdict::Violated,
        violations: vec![Violation::new("stale write", vec![3])],
    });
    let d = draw(&h, &reports, &["mutex", "fencing"], 3_000_000_000);
    let checks: Vec<(&str, bool)> = d.captions.iter().map(|c| (c.check, c.focus)).collect();
    assert_eq!(checks, [("mutex", true), ("fencing", true)]);
    assert!(
        d.svg.contains(&format!("stroke=\"{RED}\"")),
        "the expiry fencing names is red"
    );
    let only_mutex = draw(&h, &reports, &["mutex"], 3_000_000_000);
    assert_eq!(only_mutex.captions[1].check, "fencing");
    assert!(!only_mutex.captions[1].focus);
}

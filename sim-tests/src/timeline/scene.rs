//! A picture as a list of shapes whose text boxes are known, so that a test can prove no two
//! labels overlap, and the same list is what the SVG is written from.
//!
//! Every text is drawn in a monospace font, whose advance is the same for every character, so a
//! label's box follows from its length and size alone: [`CHAR_EM`] wide per character, [`ASCENT`]
//! above its baseline and [`DESCENT`] below. The layout places labels with these metrics and
//! [`Scene::collisions`] checks the result with the same ones: a label that would cross another,
//! or a bar, is found before anyone looks at the picture.

use std::fmt::Write as _;

/// The fonts the picture asks for: monospace ones whose advance is 0.6 em (DejaVu Sans Mono,
/// Liberation Mono, Menlo), with the generic family last.
pub const FONT_FAMILY: &str = "DejaVu Sans Mono, Liberation Mono, Menlo, Consolas, monospace";
/// A character's advance, in em, rounded up from the fonts' 0.6 so that a box is never too small.
pub const CHAR_EM: f64 = 0.61;
/// How far a text reaches above its baseline, in em.
pub const ASCENT: f64 = 0.8;
/// How far it reaches below, in em.
pub const DESCENT: f64 = 0.25;

/// The width of `text` at `size` px, by the monospace metrics.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * CHAR_EM
}

/// An axis-aligned box: `x0 <= x1`, `y0 <= y1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxXY {
    /// Left.
    pub x0: f64,
    /// Top.
    pub y0: f64,
    /// Right.
    pub x1: f64,
    /// Bottom.
    pub y1: f64,
}

impl BoxXY {
    /// Whether the two boxes share an area (touching edges do not count).
    pub fn intersects(&self, other: &BoxXY) -> bool {
        const EPS: f64 = 0.01;
        self.x0 < other.x1 - EPS
            && other.x0 < self.x1 - EPS
            && self.y0 < other.y1 - EPS
            && other.y0 < self.y1 - EPS
    }

    /// Whether `other` lies wholly inside this box.
    pub fn contains(&self, other: &BoxXY) -> bool {
        other.x0 >= self.x0 && other.x1 <= self.x1 && other.y0 >= self.y0 && other.y1 <= self.y1
    }
}

/// Which text a text is: labels must keep clear of bars, a bar's own text stays inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The title or the lesson.
    Title,
    /// A legend entry.
    Legend,
    /// A lane's name.
    LaneName,
    /// The text inside bar number `n` of the scene's bars.
    BarText(usize),
    /// An event's or a note's label.
    Label,
    /// A time on the axis.
    Tick,
}

/// Where a text's `x` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// At its left end.
    Start,
    /// At its middle.
    Middle,
}

/// A line of text.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    /// Anchor point, px.
    pub x: f64,
    /// Baseline, px.
    pub y: f64,
    /// Font size, px.
    pub size: f64,
    /// Bold.
    pub bold: bool,
    /// Where `x` is on the text.
    pub anchor: Anchor,
    /// A CSS colour.
    pub fill: &'static str,
    /// The words (plain text; escaped when written).
    pub text: String,
    /// What it is, for the collision rules.
    pub role: Role,
    /// Drawn on a white backdrop, so that an arrow passing behind it does not strike it through.
    pub backdrop: bool,
    /// Shown when the pointer rests on it.
    pub tooltip: Option<String>,
}

impl Text {
    /// Its box by the monospace metrics.
    pub fn bbox(&self) -> BoxXY {
        let w = text_width(&self.text, self.size);
        let x0 = match self.anchor {
            Anchor::Start => self.x,
            Anchor::Middle => self.x - w / 2.0,
        };
        BoxXY {
            x0,
            y0: self.y - ASCENT * self.size,
            x1: x0 + w,
            y1: self.y + DESCENT * self.size,
        }
    }
}

/// One shape of the picture.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A filled rectangle (a bar when `bar` is set: its index among the scene's bars).
    Rect {
        /// Its box.
        at: BoxXY,
        /// A CSS colour.
        colour: &'static str,
        /// Fill opacity.
        opacity: f64,
        /// Which bar it is, if it is one.
        bar: Option<usize>,
        /// Shown when the pointer rests on it.
        tooltip: Option<String>,
    },
    /// A straight line, with an arrow head at its end when `head` is set.
    Line {
        /// Start.
        from: (f64, f64),
        /// End.
        to: (f64, f64),
        /// A CSS colour.
        colour: &'static str,
        /// Stroke width.
        width: f64,
        /// An SVG dash array.
        dash: Option<&'static str>,
        /// An arrow head at `to`.
        head: bool,
        /// Shown when the pointer rests on it.
        tooltip: Option<String>,
    },
    /// A dot.
    Dot {
        /// Centre.
        at: (f64, f64),
        /// Radius.
        r: f64,
        /// A CSS colour.
        colour: &'static str,
        /// Shown when the pointer rests on it.
        tooltip: Option<String>,
    },
    /// A cross where a message was lost.
    Cross {
        /// Centre.
        at: (f64, f64),
        /// A CSS colour.
        colour: &'static str,
    },
    /// A text.
    Text(Text),
}

/// Two things of a picture that should not meet, by the index of each in [`Scene::shapes`].
#[derive(Clone, Debug, PartialEq)]
pub struct Collision {
    /// The first shape.
    pub a: usize,
    /// The second (the same as `a` when a bar's text leaves its bar).
    pub b: usize,
    /// What is wrong, naming the texts.
    pub what: String,
}

/// A whole picture.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scene {
    /// Width, px.
    pub width: f64,
    /// Height, px.
    pub height: f64,
    /// Prefix of the SVG's ids, so that many pictures can share one page.
    pub id: String,
    /// The shapes, in drawing order.
    pub shapes: Vec<Shape>,
    /// Labels left out because they would have crowded (routine ones only).
    pub thinned: usize,
}

impl Scene {
    /// Every text, with its index among the shapes.
    pub fn texts(&self) -> impl Iterator<Item = (usize, &Text)> {
        self.shapes.iter().enumerate().filter_map(|(i, s)| match s {
            Shape::Text(t) => Some((i, t)),
            _ => None,
        })
    }

    fn bars(&self) -> impl Iterator<Item = (usize, usize, &BoxXY)> {
        self.shapes.iter().enumerate().filter_map(|(i, s)| match s {
            Shape::Rect {
                at, bar: Some(n), ..
            } => Some((i, *n, at)),
            _ => None,
        })
    }

    /// What overlaps: two texts whose boxes intersect; a text other than a bar's own that lies on
    /// a bar; a bar's text that leaves its bar; a mark drawn over a text. Empty for a picture fit
    /// to read.
    pub fn collisions(&self) -> Vec<Collision> {
        let texts: Vec<(usize, &Text, BoxXY)> =
            self.texts().map(|(i, t)| (i, t, t.bbox())).collect();
        let mut found = Vec::new();
        for (n, (i, a, ab)) in texts.iter().enumerate() {
            for (j, b, bb) in &texts[n + 1..] {
                if ab.intersects(bb) {
                    found.push(Collision {
                        a: *i,
                        b: *j,
                        what: format!("{:?} overlaps {:?}", a.text, b.text),
                    });
                }
            }
            for (k, shape) in self.shapes.iter().enumerate() {
                if let Shape::Dot { at: (x, y), r, .. } = shape {
                    let dot = BoxXY {
                        x0: x - r,
                        y0: y - r,
                        x1: x + r,
                        y1: y + r,
                    };
                    if ab.intersects(&dot) {
                        found.push(Collision {
                            a: *i,
                            b: k,
                            what: format!("a mark covers {:?}", a.text),
                        });
                    }
                }
            }
            for (k, bar, at) in self.bars() {
                if a.role == Role::BarText(bar) {
                    if !at.contains(ab) {
                        found.push(Collision {
                            a: *i,
                            b: *i,
                            what: format!("{:?} leaves its bar", a.text),
                        });
                    }
                } else if ab.intersects(at) {
                    found.push(Collision {
                        a: *i,
                        b: k,
                        what: format!("{:?} lies on bar {bar}", a.text),
                    });
                }
            }
        }
        found
    }

    /// The picture as an SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = (self.width, self.height);
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" font-family="{FONT_FAMILY}" font-size="11">"#
        );
        let mut heads: Vec<&'static str> = Vec::new();
        for s in &self.shapes {
            if let Shape::Line {
                colour, head: true, ..
            } = s
                && !heads.contains(colour)
            {
                heads.push(colour);
            }
        }
        svg.push_str("<defs>");
        for (n, colour) in heads.iter().enumerate() {
            let _ = write!(
                svg,
                r#"<marker id="{}-head{n}" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="{colour}"/></marker>"#,
                self.id
            );
        }
        svg.push_str("</defs>\n");
        let _ = writeln!(
            svg,
            r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
        );
        for s in &self.shapes {
            match s {
                Shape::Rect {
                    at,
                    colour,
                    opacity,
                    tooltip,
                    ..
                } => {
                    let _ = write!(
                        svg,
                        r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="2" fill="{colour}" fill-opacity="{opacity}" stroke="{colour}">"#,
                        at.x0,
                        at.y0,
                        at.x1 - at.x0,
                        at.y1 - at.y0
                    );
                    close(&mut svg, "rect", tooltip);
                }
                Shape::Line {
                    from,
                    to,
                    colour,
                    width,
                    dash,
                    head,
                    tooltip,
                } => {
                    let _ = write!(
                        svg,
                        r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="{width}""#,
                        from.0, from.1, to.0, to.1
                    );
                    if let Some(d) = dash {
                        let _ = write!(svg, r#" stroke-dasharray="{d}""#);
                    }
                    if *head {
                        let n = heads.iter().position(|c| c == colour).unwrap_or(0);
                        let _ = write!(svg, r#" marker-end="url(#{}-head{n})""#, self.id);
                    }
                    svg.push('>');
                    close(&mut svg, "line", tooltip);
                }
                Shape::Dot {
                    at,
                    r,
                    colour,
                    tooltip,
                } => {
                    let _ = write!(
                        svg,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="{r}" fill="{colour}">"#,
                        at.0, at.1
                    );
                    close(&mut svg, "circle", tooltip);
                }
                Shape::Cross { at, colour } => {
                    let (x, y, d) = (at.0, at.1, 5.0);
                    let _ = writeln!(
                        svg,
                        r#"<path d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}" stroke="{colour}" stroke-width="2.5"/>"#,
                        x - d,
                        y - d,
                        x + d,
                        y + d,
                        x - d,
                        y + d,
                        x + d,
                        y - d
                    );
                }
                Shape::Text(t) => text(&mut svg, t),
            }
        }
        svg.push_str("</svg>\n");
        svg
    }
}

fn close(svg: &mut String, tag: &str, tooltip: &Option<String>) {
    if let Some(t) = tooltip {
        let _ = write!(svg, "<title>{}</title>", escape(t));
    }
    let _ = writeln!(svg, "</{tag}>");
}

fn text(svg: &mut String, t: &Text) {
    if t.backdrop {
        let b = t.bbox();
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#ffffff" fill-opacity="0.85"/>"##,
            b.x0 - 1.0,
            b.y0,
            b.x1 - b.x0 + 2.0,
            b.y1 - b.y0
        );
    }
    let anchor = match t.anchor {
        Anchor::Start => "start",
        Anchor::Middle => "middle",
    };
    let weight = if t.bold { r#" font-weight="bold""# } else { "" };
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="{}" text-anchor="{anchor}" fill="{}"{weight}>{}"#,
        t.x,
        t.y,
        t.size,
        t.fill,
        escape(&t.text)
    );
    if let Some(tip) = &t.tooltip {
        let _ = write!(svg, "<title>{}</title>", escape(tip));
    }
    svg.push_str("</text>\n");
}

/// `s` with XML's special characters escaped.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(x: f64, y: f64, text: &str) -> Shape {
        Shape::Text(Text {
            x,
            y,
            size: 11.0,
            bold: false,
            anchor: Anchor::Middle,
            fill: "#000",
            text: text.into(),
            role: Role::Label,
            backdrop: false,
            tooltip: None,
        })
    }

    #[test]
    fn a_planted_overlap_is_found() {
        let mut scene = Scene {
            width: 400.0,
            height: 100.0,
            ..Scene::default()
        };
        scene.shapes.push(label(100.0, 50.0, "write accepted"));
        scene.shapes.push(label(120.0, 55.0, "acquire"));
        let found = scene.collisions();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].a, found[0].b), (0, 1));
    }

    #[test]
    fn labels_side_by_side_or_a_row_apart_do_not_collide() {
        let mut scene = Scene::default();
        // "acquire" is 7 * 11 * 0.61 = 47 px wide: centred 48 px apart, the boxes only touch.
        scene.shapes.push(label(100.0, 50.0, "acquire"));
        scene
            .shapes
            .push(label(100.0 + 7.0 * 11.0 * CHAR_EM, 50.0, "acquire"));
        scene.shapes.push(label(100.0, 50.0 + 12.0, "renew"));
        assert!(scene.collisions().is_empty(), "{:?}", scene.collisions());
    }

    #[test]
    fn a_mark_over_a_text_is_found() {
        let mut scene = Scene::default();
        scene
            .shapes
            .push(label(100.0, 50.0, "believes it holds the lock"));
        scene.shapes.push(Shape::Dot {
            at: (100.0, 46.0),
            r: 4.5,
            colour: "#000",
            tooltip: None,
        });
        let found = scene.collisions();
        assert!(
            found.iter().any(|c| c.what.starts_with("a mark covers")),
            "{found:?}"
        );
    }

    #[test]
    fn a_label_on_a_bar_and_a_bar_text_outside_its_bar_are_found() {
        let bar = BoxXY {
            x0: 0.0,
            y0: 40.0,
            x1: 60.0,
            y1: 54.0,
        };
        let mut scene = Scene::default();
        scene.shapes.push(Shape::Rect {
            at: bar,
            colour: "#000",
            opacity: 0.2,
            bar: Some(0),
            tooltip: None,
        });
        scene.shapes.push(label(30.0, 50.0, "GC"));
        let mut text = Text {
            x: 3.0,
            y: 50.0,
            size: 10.0,
            bold: false,
            anchor: Anchor::Start,
            fill: "#000",
            text: "GC pause, far too long".into(),
            role: Role::BarText(0),
            backdrop: false,
            tooltip: None,
        };
        scene.shapes.push(Shape::Text(text.clone()));
        let found = scene.collisions();
        assert!(
            found.iter().any(|c| c.what.contains("lies on bar")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|c| c.what.contains("leaves its bar")),
            "{found:?}"
        );
        text.text = "GC".into();
        scene.shapes.truncate(1);
        scene.shapes.push(Shape::Text(text));
        assert!(scene.collisions().is_empty());
    }
}

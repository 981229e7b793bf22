//! Geo commands: points kept in a sorted set, scored by Redis's 52-bit interleaved geohash.
//!
//! Redis stores a point as the score of its member (`GEOADD` is a `ZADD`), so a geo key is a
//! sorted set to every other command, and the values cross between the servers. The geohash,
//! the haversine on Redis's Earth radius, the search's choice of cell size and of the nine
//! cells it scans, and the printing of coordinates (`%.17Lf` of the decoded cell centre,
//! trimmed) and distances (`%.4f`) are Redis's (`geohash.c`, `geohash_helper.c`, `geo.c`), so
//! the replies match to the digit, in the same order. The sorted set is reached only through
//! its methods.

use super::{Args, CmdResult, Cx, Spec, WRITE, class, int, is};
use crate::engine::db::{Value, ZSet};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static GEOADD: Spec = Spec::new("geoadd", -5, WRITE, geoadd_command);
pub(crate) static GEODIST: Spec = Spec::new("geodist", -4, 0, geodist_command);
pub(crate) static GEOHASH: Spec = Spec::new("geohash", -2, 0, geohash_command);
pub(crate) static GEOPOS: Spec = Spec::new("geopos", -2, 0, geopos_command);
pub(crate) static GEORADIUS: Spec = Spec::new("georadius", -6, WRITE, georadius_command)
    .with_reads(super::ReadRule::Decide(super::reads::store_option_reads));
pub(crate) static GEORADIUS_RO: Spec = Spec::new("georadius_ro", -6, 0, georadius_command);
pub(crate) static GEORADIUSBYMEMBER: Spec =
    Spec::new("georadiusbymember", -5, WRITE, georadius_command)
        .with_reads(super::ReadRule::Decide(super::reads::store_option_reads));
pub(crate) static GEORADIUSBYMEMBER_RO: Spec =
    Spec::new("georadiusbymember_ro", -5, 0, georadius_command);
pub(crate) static GEOSEARCH: Spec = Spec::new("geosearch", -7, 0, georadius_command);
pub(crate) static GEOSEARCHSTORE: Spec = Spec::new("geosearchstore", -8, WRITE, georadius_command)
    .with_reads(super::ReadRule::Except(1));

const LAT_MIN: f64 = -85.05112878;
const LAT_MAX: f64 = 85.05112878;
const LONG_MIN: f64 = -180.0;
const LONG_MAX: f64 = 180.0;
/// Bits per coordinate: 26, so a hash is 52 bits, exact in a double score.
const STEP_MAX: u32 = 26;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

// ---- the geohash ----

/// A cell: its interleaved bits (latitude in the even bits, longitude in the odd) at `step`
/// bits per coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    bits: u64,
    step: u32,
}

/// A cell's bounds.
#[derive(Clone, Copy, Debug)]
struct Area {
    lon: (f64, f64),
    lat: (f64, f64),
}

fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

fn squash(mut x: u64) -> u32 {
    x &= 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0x0000_0000_FFFF_FFFF) as u32
}

/// Redis's `geohashEncode` over latitude range `lat_range` (longitude always ±180).
fn encode_in(lon: f64, lat: f64, lat_range: (f64, f64), step: u32) -> Option<Cell> {
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.0) / (lat_range.1 - lat_range.0) * scale;
    let lon_offset = (lon - LONG_MIN) / (LONG_MAX - LONG_MIN) * scale;
    Some(Cell {
        bits: spread(lat_offset as u32) | (spread(lon_offset as u32) << 1),
        step,
    })
}

fn encode(lon: f64, lat: f64, step: u32) -> Option<Cell> {
    encode_in(lon, lat, (LAT_MIN, LAT_MAX), step)
}

/// Redis's `geohashDecode`.
fn decode(cell: Cell) -> Area {
    let lat_cell = f64::from(squash(cell.bits));
    let lon_cell = f64::from(squash(cell.bits >> 1));
    let scale = (1u64 << cell.step) as f64;
    let (lat_span, lon_span) = (LAT_MAX - LAT_MIN, LONG_MAX - LONG_MIN);
    Area {
        lat: (
            LAT_MIN + (lat_cell / scale) * lat_span,
            LAT_MIN + ((lat_cell + 1.0) / scale) * lat_span,
        ),
        lon: (
            LONG_MIN + (lon_cell / scale) * lon_span,
            LONG_MIN + ((lon_cell + 1.0) / scale) * lon_span,
        ),
    }
}

/// C's `(uint64_t)` conversion of a double as x86-64 compiles it: a signed conversion below
/// 2^63, one of the value less 2^63 (its top bit set back) above; out of range is the
/// conversion's "indefinite" `0x8000000000000000`.
fn c_u64(v: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let signed = |v: f64| {
        if (-TWO_63..TWO_63).contains(&v) {
            v as i64 as u64
        } else {
            1 << 63
        }
    };
    if v < TWO_63 {
        signed(v)
    } else {
        signed(v - TWO_63) ^ (1 << 63)
    }
}

/// A score as the point Redis decodes it: the centre of its 52-bit cell, clamped.
fn point_of(score: f64) -> (f64, f64) {
    let bits = c_u64(score);
    let area = decode(Cell {
        bits,
        step: STEP_MAX,
    });
    let lon = ((area.lon.0 + area.lon.1) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.lat.0 + area.lat.1) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// A point's score: its 52-bit hash.
fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode(lon, lat, STEP_MAX).map(|c| c.bits)
}

/// Redis's `geohash_move_x` and `geohash_move_y`: the cell `d` (±1) cells along the axis whose
/// bits `mask` selects (the odd bits for longitude, the even for latitude).
fn shift(cell: Cell, d: i8, mask: u64) -> Cell {
    let moving = cell.bits & mask;
    let kept = cell.bits & !mask;
    let zz = !mask >> (64 - cell.step * 2);
    let moved = if d > 0 {
        moving.wrapping_add(zz + 1)
    } else {
        (moving | zz).wrapping_sub(zz + 1)
    };
    Cell {
        bits: (moved & (mask >> (64 - cell.step * 2))) | kept,
        ..cell
    }
}

fn move_x(cell: Cell, d: i8) -> Cell {
    shift(cell, d, 0xaaaa_aaaa_aaaa_aaaa)
}

fn move_y(cell: Cell, d: i8) -> Cell {
    shift(cell, d, 0x5555_5555_5555_5555)
}

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Redis's `geohashGetDistance`: the haversine on its Earth radius.
fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

// ---- replies ----

/// A coordinate as Redis prints it (`%.17Lf`, trailing zeros trimmed): a bulk string in RESP2,
/// a double in RESP3.
fn coordinate(cx: &mut Cx<'_>, v: f64) -> Frame {
    let text = format!("{v:.17}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    let text = if text == "-0" { "0" } else { text };
    if cx.client().protocol >= 3 {
        return Frame::DoubleText(text.to_owned().into());
    }
    Frame::Bulk(Bytes::from(text.to_owned()))
}

/// A distance as Redis prints it, `%.4f`, always a bulk string.
fn distance_frame(d: f64) -> Frame {
    Frame::Bulk(Bytes::from(format!("{d:.4}")))
}

// ---- arguments ----

/// A float argument as `getDoubleFromObject` reads it, or the caller's error.
fn double(arg: &[u8], error: &'static str) -> Result<f64, Frame> {
    super::strict_double(arg).ok_or(Frame::error(error))
}

fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Frame> {
    let lon = double(lon, "ERR value is not a valid float")?;
    let lat = double(lat, "ERR value is not a valid float")?;
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return Err(Frame::error_owned(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// A unit's meters (`m`, `km`, `ft`, `mi`).
fn unit(arg: &[u8]) -> Result<f64, Frame> {
    Ok(match arg.to_ascii_lowercase().as_slice() {
        b"m" => 1.0,
        b"km" => 1000.0,
        b"ft" => 0.3048,
        b"mi" => 1609.34,
        _ => {
            return Err(Frame::error(
                "ERR unsupported unit provided. please use M, KM, FT, MI",
            ));
        }
    })
}

/// The sorted set at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a ZSet>, Frame> {
    super::read_aggregate(cx, key)
}

// ---- GEOADD, GEODIST, GEOHASH, GEOPOS ----

/// `GEOADD key [NX|XX] [CH] lon lat member…`: a `ZADD` of the points' hashes, as in Redis.
fn geoadd_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let mut options = Vec::new();
    let (mut nx, mut xx) = (false, false);
    while let Some(opt) = args.peek() {
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if !is(opt, "ch") {
            break;
        }
        options.push(opt.clone());
        args.next();
    }
    let points = args.rest();
    if !points.len().is_multiple_of(3) || (nx && xx) {
        return Err(super::SYNTAX);
    }
    let mut argv = vec![Bytes::from_static(b"zadd"), key.clone()];
    argv.extend(options);
    for point in points.chunks_exact(3) {
        let (lon, lat) = lon_lat(&point[0], &point[1])?;
        let score = score_of(lon, lat).ok_or(super::SYNTAX)?;
        argv.push(Bytes::from(score.to_string()));
        argv.push(point[2].clone());
    }
    (super::zsets::ZADD.run)(cx, &mut Args::new(&argv))
}

fn geodist_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, a, b) = (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let to_meter = match args.remaining() {
        0 => 1.0,
        1 => unit(args.next_bytes()?)?,
        _ => return Err(super::SYNTAX),
    };
    let Some(z) = read(cx, key)? else {
        return Ok(Frame::Null);
    };
    let (Some(sa), Some(sb)) = (z.score(a), z.score(b)) else {
        return Ok(Frame::Null);
    };
    let ((lon1, lat1), (lon2, lat2)) = (point_of(sa), point_of(sb));
    Ok(distance_frame(distance(lon1, lat1, lon2, lat2) / to_meter))
}

const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

fn geohash_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let scores: Vec<Option<f64>> = match read(cx, key)? {
        None => args.map(|_| None).collect(),
        Some(z) => args.map(|m| z.score(m)).collect(),
    };
    Ok(Frame::Array(
        scores
            .into_iter()
            .map(|score| {
                let Some(score) = score else {
                    return Frame::Null;
                };
                let (lon, lat) = point_of(score);
                // The standard geohash spans latitudes ±90, not the ±85.05 Redis stores.
                let Some(cell) = encode_in(lon, lat, (-90.0, 90.0), STEP_MAX) else {
                    return Frame::Null;
                };
                let text: Vec<u8> = (0..11)
                    .map(|i| {
                        let idx = if i == 10 {
                            0
                        } else {
                            (cell.bits >> (52 - (i + 1) * 5)) & 0x1f
                        };
                        ALPHABET[idx as usize]
                    })
                    .collect();
                Frame::Bulk(Bytes::from(text))
            })
            .collect(),
    ))
}

fn geopos_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let scores: Vec<Option<f64>> = match read(cx, key)? {
        None => args.map(|_| None).collect(),
        Some(z) => args.map(|m| z.score(m)).collect(),
    };
    let mut out = Vec::with_capacity(scores.len());
    for score in scores {
        out.push(match score {
            None => Frame::NullArray,
            Some(score) => {
                let (lon, lat) = point_of(score);
                Frame::Array(vec![coordinate(cx, lon), coordinate(cx, lat)])
            }
        });
    }
    Ok(Frame::Array(out))
}

// ---- searches ----

#[derive(Clone, Copy, Debug)]
enum Shape {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search: its centre, its shape in the unit's numbers, and the unit's meters.
#[derive(Clone, Copy, Debug)]
struct Search {
    lon: f64,
    lat: f64,
    shape: Shape,
    conversion: f64,
}

/// A point found.
struct Found {
    member: Bytes,
    score: f64,
    lon: f64,
    lat: f64,
    dist: f64,
}

impl Search {
    /// Redis's `geohashBoundingBox`: min lon, min lat, max lon, max lat.
    fn bounds(&self) -> [f64; 4] {
        let (height, width) = match self.shape {
            Shape::Radius(r) => (r * self.conversion, r * self.conversion),
            Shape::Box { width, height } => (
                self.conversion * height / 2.0,
                self.conversion * width / 2.0,
            ),
        };
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
        let delta = if self.lat < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.lon - delta,
            self.lat - lat_delta,
            self.lon + delta,
            self.lat + lat_delta,
        ]
    }

    /// Redis's `geohashEstimateStepsByRadius`.
    fn steps(&self) -> u32 {
        let mut range = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        if range == 0.0 {
            return STEP_MAX;
        }
        let mut step: i32 = 1;
        while range < MERCATOR_MAX {
            range *= 2.0;
            step += 1;
        }
        step -= 2;
        if self.lat > 66.0 || self.lat < -66.0 {
            step -= 1;
            if self.lat > 80.0 || self.lat < -80.0 {
                step -= 1;
            }
        }
        step.clamp(1, STEP_MAX as i32) as u32
    }

    /// The cells Redis scans, in its order (centre, N, S, E, W, NE, NW, SE, SW), those it
    /// leaves out as None (Redis's `geohashCalculateAreasByShapeWGS84`).
    fn cells(&self) -> [Option<Cell>; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let mut steps = self.steps();
        let neighbours = |steps| {
            let c = encode(self.lon, self.lat, steps).unwrap_or(Cell {
                bits: 0,
                step: steps,
            });
            let (n, s) = (move_y(c, 1), move_y(c, -1));
            let (e, w) = (move_x(c, 1), move_x(c, -1));
            let ne = move_y(move_x(c, 1), 1);
            let nw = move_y(move_x(c, -1), 1);
            let se = move_y(move_x(c, 1), -1);
            let sw = move_y(move_x(c, -1), -1);
            [c, n, s, e, w, ne, nw, se, sw]
        };
        let mut cells = neighbours(steps);
        let decrease = decode(cells[1]).lat.1 < max_lat
            || decode(cells[2]).lat.0 > min_lat
            || decode(cells[3]).lon.1 < max_lon
            || decode(cells[4]).lon.0 > min_lon;
        if steps > 1 && decrease {
            steps -= 1;
            cells = neighbours(steps);
        }
        let mut out = cells.map(Some);
        if steps >= 2 {
            let area = decode(cells[0]);
            let mut drop = |ix: [usize; 3]| {
                for i in ix {
                    out[i] = None;
                }
            };
            if area.lat.0 < min_lat {
                drop([2, 8, 7]);
            }
            if area.lat.1 > max_lat {
                drop([1, 5, 6]);
            }
            if area.lon.0 < min_lon {
                drop([4, 8, 6]);
            }
            if area.lon.1 > max_lon {
                drop([3, 7, 5]);
            }
        }
        out
    }

    /// The distance of a point in the shape, None outside it.
    fn within(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.conversion).then_some(d)
            }
            Shape::Box { width, height } => {
                if lat_distance(lat, self.lat) > height * self.conversion / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width * self.conversion / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// The points of `z` in the shape, in Redis's scan order; `limit` (0 for none) stops early
    /// (`ANY`).
    fn run(&self, z: &ZSet, limit: usize) -> Vec<Found> {
        let mut found = Vec::new();
        let mut last: Option<Cell> = None;
        for cell in self.cells().into_iter().flatten() {
            if last == Some(cell) {
                continue;
            }
            if limit != 0 && found.len() >= limit {
                break;
            }
            let shift = 52 - cell.step * 2;
            let min = (cell.bits << shift) as f64;
            let max = ((cell.bits + 1) << shift) as f64;
            for (score, member) in z.iter_from(min) {
                if score >= max {
                    break;
                }
                let (lon, lat) = point_of(score);
                if let Some(dist) = self.within(lon, lat) {
                    found.push(Found {
                        member: member.clone(),
                        score,
                        lon,
                        lat,
                        dist,
                    });
                    if limit != 0 && found.len() >= limit {
                        break;
                    }
                }
            }
            last = Some(cell);
        }
        found
    }
}

fn radius_arg(value: &[u8], unit_arg: &[u8]) -> Result<(f64, f64), Frame> {
    let r = double(value, "ERR need numeric radius")?;
    if r < 0.0 {
        return Err(Frame::error("ERR radius cannot be negative"));
    }
    Ok((r, unit(unit_arg)?))
}

/// `GEORADIUS`, `GEORADIUSBYMEMBER` (and their `_RO` forms), `GEOSEARCH` and
/// `GEOSEARCHSTORE`: Redis's `georadiusGeneric`, in its order of checks.
fn georadius_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = String::from_utf8_lossy(args.name()).to_ascii_lowercase();
    let search = name.starts_with("geosearch");
    let store_form = name == "geosearchstore";
    let no_store = name.ends_with("_ro");
    let mut store: Option<&Bytes> = None;
    if store_form {
        store = Some(args.next_bytes()?);
    }
    let key = args.next_bytes()?;
    let exists = read(cx, key)?.is_some();
    let mut centre: Option<(f64, f64)> = None;
    let mut shape: Option<(Shape, f64)> = None;
    if name.starts_with("georadiusbymember") {
        let member = args.next_bytes()?;
        let (value, unit_arg) = (args.next_bytes()?, args.next_bytes()?);
        if exists {
            // Redis reads the key once; the fake looks it up again.
            let score = cx.writing(|cx| read(cx, key).map(|z| z.and_then(|z| z.score(member))))?;
            let score = score.ok_or(Frame::error("ERR could not decode requested zset member"))?;
            centre = Some(point_of(score));
            let (r, conversion) = radius_arg(value, unit_arg)?;
            shape = Some((Shape::Radius(r), conversion));
        }
    } else if !search {
        let (lon, lat) = (args.next_bytes()?, args.next_bytes()?);
        centre = Some(lon_lat(lon, lat)?);
        let (value, unit_arg) = (args.next_bytes()?, args.next_bytes()?);
        let (r, conversion) = radius_arg(value, unit_arg)?;
        shape = Some((Shape::Radius(r), conversion));
    }
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut frommember, mut fromlonlat, mut byradius, mut bybox) = (false, false, false, false);
    let mut sort: Option<bool> = None;
    let mut count = 0usize;
    let mut storedist = false;
    let rest = args.rest();
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        let left = rest.len() - i - 1;
        if is(arg, "withdist") {
            withdist = true;
        } else if is(arg, "withhash") {
            withhash = true;
        } else if is(arg, "withcoord") {
            withcoord = true;
        } else if is(arg, "any") {
            any = true;
        } else if is(arg, "asc") {
            sort = Some(true);
        } else if is(arg, "desc") {
            sort = Some(false);
        } else if is(arg, "count") && left >= 1 {
            let n = int(&rest[i + 1])?;
            if n <= 0 {
                return Err(Frame::error("ERR COUNT must be > 0"));
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && left >= 1 && !no_store && !search {
            store = Some(&rest[i + 1]);
            storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && store_form {
            storedist = true;
        } else if is(arg, "frommember") && left >= 1 && search && !fromlonlat {
            if exists {
                let member = &rest[i + 1];
                let score =
                    cx.writing(|cx| read(cx, key).map(|z| z.and_then(|z| z.score(member))))?;
                let score =
                    score.ok_or(Frame::error("ERR could not decode requested zset member"))?;
                centre = Some(point_of(score));
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && left >= 2 && search && !frommember {
            centre = Some(lon_lat(&rest[i + 1], &rest[i + 2])?);
            fromlonlat = true;
            i += 2;
        } else if is(arg, "byradius") && left >= 2 && search && !bybox {
            let (r, conversion) = radius_arg(&rest[i + 1], &rest[i + 2])?;
            shape = Some((Shape::Radius(r), conversion));
            byradius = true;
            i += 2;
        } else if is(arg, "bybox") && left >= 3 && search && !byradius {
            let width = double(&rest[i + 1], "ERR need numeric width")?;
            let height = double(&rest[i + 2], "ERR need numeric height")?;
            if height < 0.0 || width < 0.0 {
                return Err(Frame::error("ERR height or width cannot be negative"));
            }
            shape = Some((Shape::Box { width, height }, unit(&rest[i + 3])?));
            bybox = true;
            i += 3;
        } else {
            return Err(super::SYNTAX);
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        return Err(Frame::error_owned(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if store_form {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    if search && !(frommember || fromlonlat) {
        return Err(Frame::error_owned(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            String::from_utf8_lossy(args.name())
        )));
    }
    if search && !(byradius || bybox) {
        return Err(Frame::error_owned(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            String::from_utf8_lossy(args.name())
        )));
    }
    if any && count == 0 {
        return Err(Frame::error("ERR the ANY argument requires COUNT argument"));
    }
    let (Some((lon, lat)), Some((shape, conversion))) = (centre, shape) else {
        return Ok(nothing_found(cx, store));
    };
    let query = Search {
        lon,
        lat,
        shape,
        conversion,
    };
    let limit = if any { count } else { 0 };
    let found = cx.writing(|cx| read(cx, key).map(|z| z.map(|z| query.run(z, limit))))?;
    let Some(mut found) = found else {
        return Ok(nothing_found(cx, store));
    };
    if count != 0 && sort.is_none() && !any {
        sort = Some(true);
    }
    if let Some(asc) = sort {
        found.sort_by(|a, b| {
            let order = a.dist.total_cmp(&b.dist);
            if asc { order } else { order.reverse() }
        });
    }
    let returned = if count == 0 {
        found.len()
    } else {
        found.len().min(count)
    };
    found.truncate(returned);
    for f in &mut found {
        f.dist /= conversion;
    }
    if let Some(dest) = store {
        if found.is_empty() {
            delete_destination(cx, dest);
            return Ok(Frame::Integer(0));
        }
        let mut result = ZSet::default();
        for f in &found {
            result.insert(f.member.clone(), if storedist { f.dist } else { f.score });
        }
        let event = if search {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        let value = Some(Value::ZSet(Box::new(result)));
        super::store_or_delete(cx, dest, value, (class::ZSET, event));
        return Ok(Frame::Integer(returned as i64));
    }
    let mut out = Vec::with_capacity(found.len());
    for f in found {
        if !(withdist || withhash || withcoord) {
            out.push(Frame::Bulk(f.member));
            continue;
        }
        let mut item = vec![Frame::Bulk(f.member)];
        if withdist {
            item.push(distance_frame(f.dist));
        }
        if withhash {
            item.push(Frame::Integer(f.score as i64));
        }
        if withcoord {
            item.push(Frame::Array(vec![
                coordinate(cx, f.lon),
                coordinate(cx, f.lat),
            ]));
        }
        out.push(Frame::Array(item));
    }
    Ok(Frame::Array(out))
}

/// The reply of a search of a missing key or one without a centre: no members, and a store
/// deletes its destination.
fn nothing_found(cx: &mut Cx<'_>, store: Option<&Bytes>) -> Frame {
    match store {
        Some(dest) => {
            delete_destination(cx, dest);
            Frame::Integer(0)
        }
        None => Frame::Array(Vec::new()),
    }
}

/// A store with nothing to store deletes its destination (a `del` event if it was there).
fn delete_destination(cx: &mut Cx<'_>, dest: &[u8]) {
    let now = cx.now;
    if cx.keyspace().remove(dest, now).is_some() {
        cx.keyspace().touch(dest);
        cx.notify(class::GENERIC, "del", dest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_decodes_to_its_cell_centre_and_the_hash_is_redis_s() {
        let score = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(score, 3479099956230698);
        let (lon, lat) = point_of(score as f64);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
    }
}

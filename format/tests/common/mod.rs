//! Deterministic test data shared by the format crate's integration tests (each test file is its
//! own crate and uses part of it).
#![allow(dead_code)]

/// A xorshift64 generator.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `len` bytes, the low byte of each step.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// `n` pseudo-random bytes from `seed` (xorshift, bits 24..32 of each state).
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..n).map(|_| (rng.next() >> 24) as u8).collect()
}

/// `len` bytes of text in the manner of this repository's Rust sources, from `seed`: doc comments
/// of prose and code lines of identifiers in indented blocks, words drawn with Zipf's law's
/// frequencies (the n-th most common about 1/n as often as the first), and now and then a line
/// of the last hundred repeated, some with a word changed, as code repeats itself.
pub fn source_text(len: usize, seed: u64) -> Vec<u8> {
    const WORDS: &str = "the a of to is in and that each for it as by with are be its on from at or one \
        this not an which when all their two than so where but only what first last next more \
        lane lanes warp block blocks chunk chunks byte bytes bit bits word words table tables code \
        codes length lengths offset offsets match matches literal literals stream streams symbol \
        symbols state states window input output value values count counts header frame frames \
        size sizes level levels scratch shared memory kernel kernels decoder encoder format status \
        sequence sequences entry entries slot slots step steps run runs hash chain search parse \
        read write reads writes decode encode compress decompress take takes give gives hold holds";
    const TYPES: &str = "u8 u16 u32 u64 usize bool Status Warp Frame Table Option<usize> &[u8]";
    let (words, types): (Vec<&str>, Vec<&str>) = (WORDS.split_whitespace().collect(), TYPES.split(' ').collect());
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // Rank r drawn about 1/(r + 1) as often as rank 0: (n + 1)^u - 1 for u uniform in [0, 1).
    let zipf = |rng: &mut XorShift, n: usize| {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((((n + 1) as f64).powf(u) - 1.0) as usize).min(n - 1)
    };
    let word = |rng: &mut XorShift| words[zipf(rng, words.len())];
    let mut lines: Vec<String> = Vec::new();
    let (mut out, mut depth) = (Vec::with_capacity(len + 200), 0usize);
    while out.len() < len {
        let pick = rng.below(100);
        let indent = "    ".repeat(depth);
        let line = if pick < 10 && lines.len() > 8 {
            let earlier = &lines[lines.len() - 1 - rng.below(lines.len().min(100))];
            let (old, new) = (word(&mut rng), word(&mut rng));
            if pick.is_multiple_of(3) { earlier.replacen(old, new, 1) } else { earlier.clone() }
        } else {
            let [a, b, c] = [word(&mut rng), word(&mut rng), word(&mut rng)];
            let ty = types[(a.len() * 7 + b.len()) % types.len()];
            match pick % 16 {
                0..=5 => {
                    let prose: Vec<&str> = (0..4 + pick % 11).map(|_| word(&mut rng)).collect();
                    let (before, after) = prose.split_at(prose.len() / 2);
                    format!("{indent}/// {} `{a}_{b}` {}.", before.join(" "), after.join(" "))
                }
                6 => format!("{indent}let {a}_{b} = {c}({a}, {b});"),
                7 if depth < 4 => format!("{indent}for {a} in 0..{b}_{c} {{"),
                8 if depth < 4 => format!("{indent}if {a}.{b} < {c} {{"),
                9 => format!("{indent}{a}.{b}_{c}({a}, &mut {c})?;"),
                10 if depth < 4 => format!("{indent}pub fn {a}_{b}({c}: {ty}) -> {ty} {{"),
                11 => format!("{indent}const {}: usize = {};", a.to_uppercase(), pick * 13 % 256),
                12 => format!("{indent}assert_eq!({a}_{b}, {c}, \"{a} {b}\");"),
                13 => format!("{indent}#[inline(always)]"),
                _ if depth > 0 => format!("{}}}", "    ".repeat(depth - 1)),
                _ => String::new(),
            }
        };
        depth = match line.trim_end().chars().last() {
            Some('{') => depth + 1,
            Some('}') => depth.saturating_sub(1),
            _ => depth,
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        lines.push(line);
    }
    out.truncate(len);
    out
}

//! MLIR's fast-math flags on float operations (`arith` dialect,
//! `#arith.fastmath<...>`; the flags and their meaning are LLVM's, see the
//! LLVM Language Reference, "Fast-Math Flags").
//!
//! An op carries them in its attribute `fastmath`, whose value is the
//! dialect attribute `#arith.fastmath<flag, ...>`; the custom form of a
//! float op writes them after the operands, `arith.mulf %a, %b
//! fastmath<contract> : f64`, as MLIR does. With no flag an op computes
//! exactly what IEEE 754 says, which is L0's default everywhere:
//! - `reassoc`: the op may be reassociated with others carrying the flag
//!   (the `gen` lowering sets it on the accumulators of reduce generators,
//!   whose monoids are associative by declaration, IR-SPEC §3);
//! - `nnan`, `ninf`: operands and result may be assumed not NaN / not
//!   infinite (folds may use this: `x * 0.0` is `0.0` with `nnan nsz`);
//! - `nsz`: the sign of a zero result does not matter (`x + 0.0` is `x`);
//! - `arcp`: a division may use a reciprocal;
//! - `contract`: a multiply and an add both carrying it may be computed as
//!   one fused multiply-add (rounded once); `--fp-contract=fast` sets it;
//! - `afn`: approximate functions; `fast` is all of them, `none` none.

use crate::attributes::Attribute;
use crate::context::{Context, OpId};

/// The attribute key holding an op's flags.
pub const KEY: &str = "fastmath";

/// A set of fast-math flags (a bit set; [`FastMath::NONE`] is exact IEEE).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FastMath(u8);

/// The flags in MLIR's printing order, with their bits.
const FLAGS: [(&str, u8); 7] = [
    ("reassoc", 1),
    ("nnan", 2),
    ("ninf", 4),
    ("nsz", 8),
    ("arcp", 16),
    ("contract", 32),
    ("afn", 64),
];

impl FastMath {
    /// No flag: exact IEEE semantics.
    pub const NONE: FastMath = FastMath(0);
    pub const REASSOC: FastMath = FastMath(1);
    pub const NNAN: FastMath = FastMath(2);
    pub const NINF: FastMath = FastMath(4);
    pub const NSZ: FastMath = FastMath(8);
    pub const ARCP: FastMath = FastMath(16);
    pub const CONTRACT: FastMath = FastMath(32);
    pub const AFN: FastMath = FastMath(64);
    /// Every flag (MLIR's and LLVM's `fast`).
    pub const FAST: FastMath = FastMath(127);

    /// The flag (or `none`/`fast`) spelled `word`.
    pub fn from_word(word: &str) -> Option<FastMath> {
        match word {
            "none" => Some(FastMath::NONE),
            "fast" => Some(FastMath::FAST),
            _ => FLAGS
                .iter()
                .find(|(w, _)| *w == word)
                .map(|&(_, b)| FastMath(b)),
        }
    }

    /// The union of the words in `words` (each a flag, `none` or `fast`);
    /// the first unknown word is the error.
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<FastMath, String> {
        let mut f = FastMath::NONE;
        for w in words {
            f = f | FastMath::from_word(w).ok_or_else(|| w.to_string())?;
        }
        Ok(f)
    }

    /// The flag names, in MLIR's order: `["fast"]` for all of them,
    /// `["none"]` for none.
    pub fn words(self) -> Vec<&'static str> {
        if self == FastMath::FAST {
            return vec!["fast"];
        }
        if self.is_empty() {
            return vec!["none"];
        }
        FLAGS
            .iter()
            .filter(|&&(_, b)| self.0 & b != 0)
            .map(|&(w, _)| w)
            .collect()
    }

    /// Whether no flag is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: FastMath) -> bool {
        self.0 & other.0 == other.0
    }

    /// `#arith.fastmath<flags>`.
    pub fn to_attr(self) -> Attribute {
        let params = self
            .words()
            .into_iter()
            .map(|w| Attribute::Keyword(w.to_string()))
            .collect();
        Attribute::dialect("arith", "fastmath", params)
    }

    /// The flags of `#arith.fastmath<...>`; `Err` names what is wrong.
    pub fn from_attr(a: &Attribute) -> Result<FastMath, String> {
        match a {
            Attribute::Dialect(d) if d.dialect == "arith" && d.name == "fastmath" => {
                let mut words = Vec::with_capacity(d.params.len());
                for p in &d.params {
                    match p {
                        Attribute::Keyword(w) => words.push(w.as_str()),
                        other => return Err(format!("'{other}' is not a fast-math flag")),
                    }
                }
                FastMath::from_words(words).map_err(|w| unknown_flag(&w))
            }
            other => Err(format!(
                "'fastmath' must be '#arith.fastmath<...>', but got '{other}'"
            )),
        }
    }

    /// The flags of `op` (none when it has no well-formed `fastmath`).
    pub fn of(ctx: &Context, op: OpId) -> FastMath {
        ctx.attr(op, KEY)
            .and_then(|a| FastMath::from_attr(a).ok())
            .unwrap_or_default()
    }

    /// Adds `flags` to those of `op`.
    pub fn add_to(ctx: &mut Context, op: OpId, flags: FastMath) {
        let old = FastMath::of(ctx, op);
        if !old.contains(flags) {
            ctx.set_attr(op, KEY, (old | flags).to_attr());
        }
    }
}

/// The error for a word that is not a flag.
pub fn unknown_flag(word: &str) -> String {
    format!(
        "unknown fast-math flag '{word}' (expected none, reassoc, nnan, ninf, nsz, arcp, contract, afn or fast)"
    )
}

impl std::ops::BitOr for FastMath {
    type Output = FastMath;
    fn bitor(self, o: FastMath) -> FastMath {
        FastMath(self.0 | o.0)
    }
}

impl std::fmt::Display for FastMath {
    /// `contract` or `nnan,nsz` (MLIR's custom form, inside `fastmath<...>`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.words().join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        let f = FastMath::from_words(["contract", "nnan"]).unwrap();
        assert_eq!(f.to_string(), "nnan,contract");
        assert_eq!(FastMath::from_attr(&f.to_attr()), Ok(f));
        assert_eq!(FastMath::from_words(["fast"]).unwrap().to_string(), "fast");
        assert_eq!(FastMath::from_words(["none"]).unwrap(), FastMath::NONE);
        assert_eq!(FastMath::from_words(["fused"]), Err("fused".to_string()));
        assert!(FastMath::FAST.contains(FastMath::CONTRACT | FastMath::NSZ));
        assert!(!FastMath::CONTRACT.contains(FastMath::NSZ));
    }
}

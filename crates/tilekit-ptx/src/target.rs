//! PTX targets and the ISA version each is emitted with.
//!
//! | target | chips | PTX ISA | notes |
//! |---|---|---|---|
//! | `sm_80` | A100 | 8.0 | mma.sync, cp.async |
//! | `sm_90` | H100, H200 | 8.0 | + TMA, clusters |
//! | `sm_90a` | H100, H200 | 8.0 | + wgmma, setmaxnreg (architecture-specific) |
//!
//! ISA 8.0 is the lowest version that knows `sm_90a`; the CUDA 13.0 driver JITs it.

use std::str::FromStr;

use crate::error::PtxError;

/// A PTX target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Ampere.
    Sm80,
    /// Hopper, portable features.
    Sm90,
    /// Hopper with architecture-specific features (wgmma).
    Sm90a,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 3] = [Target::Sm80, Target::Sm90, Target::Sm90a];

    /// The `.target` name.
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::Target::Sm90a.name(), "sm_90a");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
        }
    }

    /// The `.version` emitted.
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::Target::Sm80.ptx_version(), "8.0");
    /// ```
    pub fn ptx_version(self) -> &'static str {
        "8.0"
    }

    /// The best target for a compute capability.
    ///
    /// ```
    /// use tilekit_ptx::Target;
    /// assert_eq!(Target::for_compute_capability(9, 0), Some(Target::Sm90a));
    /// assert_eq!(Target::for_compute_capability(8, 6), Some(Target::Sm80));
    /// assert_eq!(Target::for_compute_capability(7, 5), None);
    /// ```
    pub fn for_compute_capability(major: i32, minor: i32) -> Option<Target> {
        match (major, minor) {
            (9, 0) => Some(Target::Sm90a),
            (m, _) if m >= 9 => Some(Target::Sm90),
            (8, _) => Some(Target::Sm80),
            _ => None,
        }
    }
}

impl FromStr for Target {
    type Err = PtxError;
    /// ```
    /// let t: tilekit_ptx::Target = "sm_90a".parse().unwrap();
    /// assert_eq!(t, tilekit_ptx::Target::Sm90a);
    /// assert!("sm_75".parse::<tilekit_ptx::Target>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, PtxError> {
        Target::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| PtxError::UnknownTarget { name: s.to_string() })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

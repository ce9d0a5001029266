//! A tally of known-answer checks.

/// Counts the checks run and failed. Kept deliberately tiny: the count is the firmware's
/// only output, so a failing check costs no formatting code.
#[derive(Clone, Copy, Debug, Default)]
pub struct Checks {
    run: u32,
    failed: u32,
}

impl Checks {
    /// No checks yet.
    pub const fn new() -> Self {
        Self { run: 0, failed: 0 }
    }

    /// Records one check.
    pub fn check(&mut self, ok: bool) {
        self.run += 1;
        if !ok {
            self.failed += 1;
        }
    }

    /// Records a fallible step: a failure if `result` is an error, else its value.
    pub fn ok<T, E>(&mut self, result: Result<T, E>) -> Option<T> {
        self.check(result.is_ok());
        result.ok()
    }

    /// Checks run so far.
    #[cfg_attr(not(feature = "semihosting"), allow(dead_code))]
    pub const fn run(&self) -> u32 {
        self.run
    }

    /// Checks failed so far.
    pub const fn failed(&self) -> u32 {
        self.failed
    }
}

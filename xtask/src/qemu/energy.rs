//! Energy per transaction — a **model**, not a measurement:
//!
//! ```text
//! E = instructions × E_cycle(Cortex-M4 @ 64 MHz, or ESP32-C3 @ 160 MHz; CPI 1)
//!   + uplink airtime × P_TX + downlink airtime × P_RX
//! airtime = bytes on the air (UDP payload + 28 B IPv4/UDP per datagram) × 8 / link rate
//! ```
//!
//! Every constant carries its source: the Cortex-M4's energy per cycle and the radios'
//! powers from `shared/reference/anchors-performance.md` §4.2 and §4.3; the link rates from
//! mote-sim's `LinkProfile`; the ESP32-C3's energy per cycle (riscv32imc runs) from a
//! board-level bench measurement not in the reference files: R. Dobson, "Investigating
//! ESP32-C3 Power Management" (2023), <https://robdobson.com/2023/11/investigating-esp32-c3-power-management/>,
//! row "All off, empty loop()" (26.8 mA average). Not modelled, and larger than everything above on NB-IoT (§4.3): RRC setup / PSM
//! exit, the inactivity tail before the radio sleeps, ECL repetitions, and listening while
//! waiting for the peer.

use serde_json::json;

use super::{Profile, Target};

/// One constant of the model with its source.
struct Constant {
    name: &'static str,
    value: f64,
    unit: &'static str,
    source: &'static str,
}

/// The model of one profile.
pub struct Model {
    profile: Profile,
    constants: Vec<Constant>,
}

/// Energy of one transaction, split by term.
pub struct Estimate {
    cpu_j: f64,
    tx_j: f64,
    rx_j: f64,
    tx_s: f64,
    rx_s: f64,
}

impl Estimate {
    pub fn total(&self) -> f64 {
        self.cpu_j + self.tx_j + self.rx_j
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "model": true,
            "cpu_j": self.cpu_j, "radio_tx_j": self.tx_j, "radio_rx_j": self.rx_j,
            "tx_airtime_s": self.tx_s, "rx_airtime_s": self.rx_s, "total_j": self.total(),
        })
    }
}

const E_CYCLE: Constant = Constant {
    name: "cpu energy per cycle (Cortex-M4 @ 64 MHz, 100 uA/MHz at 3 V)",
    value: 0.3e-9,
    unit: "J/cycle",
    source: "anchors-performance.md §4.2: STM32L476 (Cortex-M4F) 100 uA/MHz run mode \
             (Zephyr disco_l475_iot1 board docs) = 0.3 nJ/cycle at 3 V",
};

/// The riscv32imc image's core: an ESP32-C3 at its default 160 MHz. CPI 1 is assumed (a lower
/// bound: the C3 runs from cached external flash). The current is a board-level measurement
/// (an Arduino sketch, `loop()` empty, Wi-Fi and BLE off, on the author's own ESP32-C3 board
/// at 3.3 V): it includes the board's regulator and idle parts, so it is an upper figure for
/// the chip alone. Source: <https://robdobson.com/2023/11/investigating-esp32-c3-power-management/>,
/// table "CPU Current Usage", row "All off, empty loop()": 26.8 mA average (34.4 mA peak). Not
/// cross-checked against the ESP32-C3 datasheet's modem-sleep table: neither the reference
/// files nor the stored pages hold that table.
const E_CYCLE_ESP32C3: Constant = Constant {
    name: "cpu energy per cycle (ESP32-C3 @ 160 MHz, 26.8 mA at 3.3 V, radios off)",
    value: 0.0268 * 3.3 / 160e6,
    unit: "J/cycle",
    source: "R. Dobson, Investigating ESP32-C3 Power Management (2023), \
             robdobson.com/2023/11/investigating-esp32-c3-power-management/, row \"All off, \
             empty loop()\": 26.8 mA average, 160 MHz, Wi-Fi/BLE off = 0.55 nJ/cycle at 3.3 V \
             (board-level Arduino measurement, third party; CPI 1 assumed)",
};

impl Model {
    /// The constants for `profile` on `target`'s core: WLAN is an ESP32-class radio, NB-IoT
    /// an nRF9160.
    pub fn for_run(target: Target, profile: Profile) -> Self {
        let (up, down, _) = profile.link();
        let rates = [
            Constant {
                name: "uplink rate",
                value: up as f64,
                unit: "bit/s",
                source: "mote-sim LinkProfile (the rate the bridge emulates)",
            },
            Constant {
                name: "downlink rate",
                value: down as f64,
                unit: "bit/s",
                source: "mote-sim LinkProfile (the rate the bridge emulates)",
            },
        ];
        let radio = match profile {
            Profile::Wlan => [
                Constant {
                    name: "P_TX (ESP32 Wi-Fi TX 13-21 dBm, 160-260 mA mid-range 210 mA at 3.3 V)",
                    value: 0.210 * 3.3,
                    unit: "W",
                    source: "anchors-performance.md §4.2: ESP-WROOM-32 datasheet, Wi-Fi TX 160-260 mA",
                },
                Constant {
                    name: "P_RX (ESP32 RX/listening 80-90 mA, 85 mA at 3.3 V)",
                    value: 0.085 * 3.3,
                    unit: "W",
                    source: "anchors-performance.md §4.2: ESP-WROOM-32 datasheet, RX/listening 80-90 mA",
                },
            ],
            Profile::Nbiot => [
                Constant {
                    name: "P_TX (nRF9160 NB-IoT uplink, 23 dBm class)",
                    value: 0.6,
                    unit: "W",
                    source: "anchors-performance.md §4.3: P_TX ~0.4-1.1 W at 3.7 V (100-300 mA); worked example uses ~0.6 W",
                },
                Constant {
                    name: "P_RX (nRF9160 NB-IoT downlink)",
                    value: 0.2,
                    unit: "W",
                    source: "anchors-performance.md §4.3: P_RX ~0.15-0.2 W",
                },
            ],
        };
        let mut constants = vec![match target {
            Target::CortexM4 => E_CYCLE,
            Target::Riscv32 => E_CYCLE_ESP32C3,
        }];
        constants.extend(rates);
        constants.extend(radio);
        Self { profile, constants }
    }

    fn value(&self, i: usize) -> f64 {
        self.constants.get(i).map_or(0.0, |c| c.value)
    }

    /// The estimate for `instructions` and the bytes on the air each way.
    pub fn estimate(&self, instructions: u64, up_bytes: u64, down_bytes: u64) -> Estimate {
        let (e_cycle, up, down, p_tx, p_rx) =
            (self.value(0), self.value(1), self.value(2), self.value(3), self.value(4));
        let tx_s = up_bytes as f64 * 8.0 / up;
        let rx_s = down_bytes as f64 * 8.0 / down;
        Estimate {
            cpu_j: instructions as f64 * e_cycle,
            tx_j: tx_s * p_tx,
            rx_j: rx_s * p_rx,
            tx_s,
            rx_s,
        }
    }

    pub fn constants_json(&self) -> serde_json::Value {
        json!({
            "profile": self.profile.name(),
            "formula": "E = insn * E_cycle + up_bytes*8/up_rate * P_TX + down_bytes*8/down_rate * P_RX (model; excludes RRC setup, inactivity tail, ECL repetitions, idle listening)",
            "constants": self.constants.iter().map(|c| json!({
                "name": c.name, "value": c.value, "unit": c.unit, "source": c.source,
            })).collect::<Vec<_>>(),
        })
    }

    pub fn print_constants(&self) {
        println!(
            "  energy (MODEL): E = insn x E_cycle + TX airtime x P_TX + RX airtime x P_RX; \
             RRC setup, inactivity tail, repetitions and idle listening not included"
        );
        for c in &self.constants {
            println!("    {:<72} {:>12.4e} {:<8} [{}]", c.name, c.value, c.unit, c.source);
        }
    }
}

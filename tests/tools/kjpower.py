#!/usr/bin/env python3
"""Power for a run made by kjgen.py: its kernels on one device (made where the run has none), a
power reading every 5 ms over 15 s (125 W, 300 W from 10 s to 12 s, where the tests' forwards
run; the energy counter updating every 100 ms; SM clock 1980 MHz), and an idle power of 80 W. For
compare tests whose replay rows say the rest.

  kjpower.py RUN.kjdb
"""
import sqlite3
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    dev = db.execute("SELECT min(id) FROM device").fetchone()[0]
    if dev is None:
        db.execute("INSERT INTO device(id, uuid, name) VALUES(1, 'GPU-test', 'test')")
        dev = 1
    db.execute("UPDATE kernel SET device_id = ?", (dev,))
    rows, e = [], 0.0
    for i in range(3000):
        t = i * 5_000_000
        w = 300 if 10e9 <= t < 12e9 else 125
        e += w * 5
        rows.append((dev, t, w * 1000, w * 1000, int(e), 1 if i % 20 == 0 else 0, 1980))
    db.executemany("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj,"
                   " energy_updated, sm_clock_mhz) VALUES(?,?,?,?,?,?,?)", rows)
    db.execute("INSERT INTO idle_power(device_id, median_mw, p10_mw, p90_mw, samples, measured_ns, source)"
               " VALUES(?, 80000, 79000, 81000, 100, 0, 'test')", (dev,))
    db.commit()


if __name__ == "__main__":
    main()

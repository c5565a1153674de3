#!/bin/bash
# device command for the energy engineer (issue 3)
C=$PWD/.carry/energy
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,power.draw,power.limit --format=csv 2>&1 | tee $OUT/smi.txt
echo "== gpu test"; timeout 60 $C/test_energy_gpu 2>&1 | tee $OUT/test_energy_gpu.txt; echo "rc=${PIPESTATUS[0]}"
echo "== power"; timeout 20 $C/kjoule power --duration 3 -o $OUT/power.csv 2>&1 | tee $OUT/power.txt; echo "rc=${PIPESTATUS[0]}"
head -3 $OUT/power.csv; echo rows $(wc -l < $OUT/power.csv) edges $(awk -F, '$7==1' $OUT/power.csv | wc -l)
timeout 5 $C/kjoule power --interval-ms 10 -o $OUT/power_int.csv & p=$!; sleep 2; kill -INT $p; wait $p; echo "sigint rc=$?"; tail -c 300 $OUT/power_int.csv
echo "== idle"; timeout 20 $C/kjoule power --idle --duration 3 --db $OUT/idle.kjdb; echo "rc=$?"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(list(c.execute('select * from idle_power'))); print(list(c.execute('select uuid,name,power_limit_mw,nvml_index,energy_counter,driver_version from device')))" $OUT/idle.kjdb
echo "== bench"; KJ_BENCH_SAMPLES=$OUT/samples.csv timeout 300 $C/energy_accuracy $OUT/energy_accuracy.json "$@" 2>&1 | tee $OUT/bench.txt; echo "rc=${PIPESTATUS[0]}"

source scripts/device-env.sh
cd .carry/build && timeout 400 ctest -L gpu --timeout 300 > $OUT/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|Failed|\*\*\*|Test +#" $OUT/ctest_gpu.log | tail -12
grep -E "fastest|FAIL" $OUT/ctest_gpu.log | head

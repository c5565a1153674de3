# On the GPU machine: `source scripts/device-env.sh` first in every device command.
# Makes the paths baked into .carry/build valid, and finds the carried libraries.
here=$(pwd)
if [ ! -e /work/main ] || [ "$(readlink -f /work/main)" != "$here" ]; then
	mkdir -p /work && rm -rf /work/main && ln -s "$here" /work/main
fi
export LD_LIBRARY_PATH="$here/.carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KJ_BUILD="$here/.carry/build"
export PYTHONUNBUFFERED=1

# Shared by run.sh and run2.sh (sourced after each sets R, its recording folder): the device's settings, NCCL
# 2.32.3's library unpacked to /tmp, and `job NAME MODE [ENV=VALUE...]`, one two-rank torchrun job under $R/NAME.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
rm -rf "$R"; mkdir -p "$R"
python3 -c "
import lzma, shutil
with lzma.open('$H/libnccl.so.2.xz') as a, open('/tmp/libnccl.so.2', 'wb') as b: shutil.copyfileobj(a, b, 1 << 24)"
N232=/tmp/libnccl.so.2
job() {  # name mode [ENV=VALUE...]
  local name=$1 mode=$2; shift 2; local d=$R/$name; mkdir -p $d/dumps
  echo "env $* torchrun --standalone --nproc-per-node 2 --log-dir torchrun --redirects 3 --tee 3 job.py $mode" > $d/command.txt
  ( cd $d && env JOB_DIR=$d "$@" timeout -s KILL 150 torchrun --standalone --nproc-per-node 2 --log-dir $d/torchrun \
      --redirects 3 --tee 3 $H/job.py $mode > $d/console.log 2>&1; echo "$name exit=$?" >> $R/exits.txt )
}

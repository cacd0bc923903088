"""A training script whose argument parser knows nothing of --local-rank: torch.distributed.launch passes it."""
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
print("epochs", args.epochs)

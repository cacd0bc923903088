"""``ncclcheck snapshot``: diagnose a job while it hangs, from the node it runs on.

Modules: ``procs`` finds the rank processes, ``pyspy`` takes their stacks, ``dumppipe``
asks PyTorch for flight-recorder dumps, ``gpu`` reads nvidia-smi, ``settings`` lints each
rank's environment, ``collect`` runs them together, ``verdict`` decides, ``archive``
writes and reads the result as one file.
"""

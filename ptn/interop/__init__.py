"""Layer 6: numpy and torch in safetensors' verbs (load_file, save_file), the ExecuTorch bridge.
Uses ptn.package and the layers below it; torch is imported only when called.
"""

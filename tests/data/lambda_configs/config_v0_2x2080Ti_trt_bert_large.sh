# Excerpt of lambdal/deeplearning-benchmark pytorch/scripts/config_v0/config_pytorch_2x2080Ti_trt.sh
# (BERT-large's blocks, verbatim; the {2,4,8}x2080Ti{,NVlink}_trt{,2}.sh configs hold the same)
PyTorch_bert_large_squad_FP32_PARAMS=(
            "examples/bert"
            args      
            "/data/bert_large/bert_large_uncased.pt"
            "2.0"
            "2"
            "0.0"
            "fp32"
            "${NUM_GPU}"
            "1"
            "/data/squad/v1.1"
            "/data/bert_large/bert-large-uncased-vocab.txt"
            "."
            "train"
            "/data/bert_large/bert_config.json"
            "1000"
)

PyTorch_bert_large_squad_FP16_PARAMS=(
            "examples/bert"
            args      
            "/data/bert_large/bert_large_uncased.pt"
            "2.0"
            "2"
            "0.0"
            "${NUM_GPU}"
            "1"
            "1"
            "/data/squad/v1.1"
            "/data/bert_large/bert-large-uncased-vocab.txt"
            "."
            "train"
            "/data/bert_large/bert_config.json"
            "1000"
)

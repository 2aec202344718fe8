# Excerpt of lambdal/deeplearning-benchmark pytorch/scripts/config_v1/config_pytorch_80GB.sh
# (NCF's blocks, verbatim): sourced by the A100 80GB and H100 configs of lambda_v1
PyTorch_ncf_FP32_PARAMS=(
            "benchmark/Recommendation/NCF"
            args
            --data                    "/data/ncf/cache/ml-20m"
            --epochs                  "2"
            --batch_size              "8000000"
           )

PyTorch_ncf_FP16_PARAMS=(
            "benchmark/Recommendation/NCF"
            args
            --data                    "/data/ncf/cache/ml-20m"
            --epochs                  "2"
            --batch_size              "10000000"
           )

# Excerpt of lambdal/deeplearning-benchmark pytorch/scripts/config_v1/config_pytorch_48GB.sh
# (NCF's FP16 block, verbatim): the 48 GB configs of lambda_v1 pass --amp
PyTorch_ncf_FP16_PARAMS=(
            "benchmark/Recommendation/NCF"
            args
            --data                    "/data/ncf/cache/ml-20m"
            --epochs                  "2"
            --batch_size              "10000000"
            --amp
           )

"""Whether this machine has the cloud credentials a launcher signs its calls with, asked
before anything is launched or billed.

A missing credential is a setting, like a missing bucket: ``MissingCredentials`` (a
``ProbeError``) says in one line what was looked for and how to provide it, and no probe is
started or stored. The checks read only what the SDKs read locally (environment, config
files, and, as the SDKs do, the instance metadata service of a cloud VM); they never print a
secret. The SDKs are imported here, lazily; a missing one is named with its pip extra.
"""

from __future__ import annotations

from probes.errors import ProbeError

__all__ = ["MissingCredentials", "check_aws_credentials", "check_gcp_credentials"]


class MissingCredentials(ProbeError):
    """A cloud launcher cannot sign its calls: no credentials, or its SDK is not installed."""


def _sdk_missing(cloud: str, exc: ModuleNotFoundError, who: str) -> MissingCredentials:
    return MissingCredentials(f"{who} need the {cloud} SDK ({exc.name} is not installed); "
                              f"run: pip install 'advisor[{cloud}]'")


def check_aws_credentials(who: str = "aws probes") -> None:
    """``MissingCredentials`` unless boto3's chain finds credentials (environment, the shared
    credentials and config files, an instance or container role); ``who`` needs them."""
    try:
        import boto3
        from botocore.exceptions import BotoCoreError
    except ModuleNotFoundError as exc:
        raise _sdk_missing("aws", exc, who) from exc
    try:
        found = boto3.Session().get_credentials()
    except BotoCoreError as exc:  # a named profile that does not exist, a broken config file
        raise MissingCredentials(f"{who} cannot read AWS credentials: {exc}; fix AWS_PROFILE "
                                 "or ~/.aws/config, or run 'aws configure'") from exc
    if found is None:
        raise MissingCredentials(
            f"{who} need AWS credentials and none were found: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile in ~/.aws/credentials "
            "('aws configure' writes one), or run on an instance with an IAM role")


def check_gcp_credentials() -> None:
    """``MissingCredentials`` unless google-auth finds application default credentials
    (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default login, a VM's account)."""
    try:
        import google.auth
        from google.auth.exceptions import GoogleAuthError
    except ModuleNotFoundError as exc:
        raise _sdk_missing("gcp", exc, "gcp probes") from exc
    try:
        google.auth.default()
    except GoogleAuthError as exc:
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reason = ("none were found" if "credentials were not found" in said
                  else f"they cannot be read ({said.rstrip('.')})")
        raise MissingCredentials(
            f"gcp probes need Google application default credentials and {reason}: run "
            "'gcloud auth application-default login', or set GOOGLE_APPLICATION_CREDENTIALS to "
            "a service-account key file") from exc

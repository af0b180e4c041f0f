package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// CredentialVars are the worker's environment variables an s3 store reads
// its credentials and settings from (the AWS SDK's usual ones): they
// belong to the worker, and never reach a step.
var CredentialVars = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
}

// HidesCredentials tells whether s reads credentials from the worker's
// environment (CredentialVars), which steps must then never see.
func HidesCredentials(s Store) bool {
	_, ok := s.(*bucket)
	return ok
}

// bucket is a store in an S3-compatible bucket, its keys under prefix.
type bucket struct {
	client         *s3.Client
	name, prefix   string
	endpoint, repr string
}

// sha256Meta is the object metadata that holds an object's sha256.
const sha256Meta = "sha256"

func openS3(ctx context.Context, u *url.URL) (*bucket, error) {
	raw := u.String()
	if u.Host == "" {
		return nil, fmt.Errorf("store %q: name the bucket: s3://bucket/prefix", raw)
	}
	q := u.Query()
	for k := range q {
		if k != "endpoint" && k != "region" {
			return nil, fmt.Errorf("store %q: unknown option %q (endpoint and region are known)", raw, k)
		}
	}
	prefix := strings.Trim(u.Path, "/")
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("store %q: %v", raw, err)
	}
	region := q.Get("region")
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("store %q: %v", raw, err)
	}
	endpoint := q.Get("endpoint")
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			// A server other than AWS: addressed by path, as MinIO,
			// SeaweedFS, VersityGW and Ceph all accept.
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
		// Checksums only where S3 requires them: S3-compatible servers
		// differ on the newer ones; the payload's sha256 is signed anyway.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &bucket{client: client, name: u.Host, prefix: prefix, endpoint: endpoint, repr: raw}, nil
}

func (b *bucket) URI(key string) string {
	return "s3://" + b.name + "/" + b.full(key)
}

func (b *bucket) full(key string) string {
	if b.prefix == "" {
		return key
	}
	return b.prefix + "/" + key
}

// Put uploads in one request with the body's sha256 as the signed payload
// hash: the server refuses a body that does not match it, and makes the
// object visible only once it has all of it.
func (b *bucket) Put(ctx context.Context, key string, body io.Reader, size int64, sum string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.name), Key: aws.String(b.full(key)),
		Body: body, ContentLength: aws.Int64(size),
		Metadata: map[string]string{sha256Meta: sum},
	}, withPayloadHash(sum))
	if err != nil {
		return b.wrap(key, err)
	}
	return nil
}

// withPayloadHash signs the request with sum as its payload's sha256,
// instead of the SDK reading the body twice (once to hash it) or sending
// it unsigned.
func withPayloadHash(sum string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("PlaybookPayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, sum), in)
				}), "Retry", middleware.After)
		})
	}
}

func (b *bucket) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := CheckKey(key); err != nil {
		return nil, Object{}, err
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(b.full(key))})
	if err != nil {
		return nil, Object{}, b.wrap(key, err)
	}
	o := Object{Key: key, Bytes: aws.ToInt64(out.ContentLength), SHA256: out.Metadata[sha256Meta], Modified: aws.ToTime(out.LastModified)}
	return out.Body, o, nil
}

// List lists the keys, then asks for each object's sha256 (a listing does
// not carry metadata).
func (b *bucket) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := b.each(ctx, prefix, func(key string, obj types.Object) error {
		head, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: obj.Key})
		if err != nil {
			return b.wrap(key, err)
		}
		out = append(out, Object{Key: key, Bytes: aws.ToInt64(obj.Size), SHA256: head.Metadata[sha256Meta], Modified: aws.ToTime(obj.LastModified)})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, err
}

func (b *bucket) Sizes(ctx context.Context, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	err := b.each(ctx, prefix, func(key string, obj types.Object) error {
		out[key] = aws.ToInt64(obj.Size)
		return nil
	})
	return out, err
}

func (b *bucket) Delete(ctx context.Context, prefix string) (int, error) {
	n := 0
	err := b.each(ctx, prefix, func(key string, obj types.Object) error {
		if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: obj.Key}); err != nil {
			return b.wrap(key, err)
		}
		n++
		return nil
	})
	return n, err
}

// each calls fn for every object under prefix, by key within the store.
func (b *bucket) each(ctx context.Context, prefix string, fn func(key string, obj types.Object) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	prefix = strings.TrimSuffix(prefix, "/")
	listed := b.prefix
	if prefix != "" {
		listed = b.full(prefix)
	}
	if listed != "" && prefix == "" {
		listed += "/"
	}
	pages := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: aws.String(b.name), Prefix: aws.String(listed)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return b.wrap(prefix, err)
		}
		for _, obj := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(obj.Key), b.prefix+"/")
			if b.prefix == "" {
				key = aws.ToString(obj.Key)
			}
			if !under(key, prefix) {
				continue
			}
			if err := fn(key, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// wrap says which store and key an error is of, and makes a missing object
// ErrNotFound.
func (b *bucket) wrap(key string, err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return fmt.Errorf("store %s, %s: %s: %s", b.repr, key, api.ErrorCode(), api.ErrorMessage())
	}
	return fmt.Errorf("store %s, %s: %v", b.repr, key, err)
}
